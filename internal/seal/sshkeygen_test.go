package seal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An approver signs with the real ssh-keygen, from a private key file or
// a literal public key; what it signs verifies with seal.Verify, in the
// approval namespace only.
func TestKeygenSigner(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		needKeygen(t)
	}
	ctx := context.Background()
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "octocat", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	s, err := NewKeygenSigner(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pubLine, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(string(pubLine))
	if err != nil || pub.Fingerprint() != s.Public().Fingerprint() {
		t.Fatalf("public key %v, %v", s.Public().Fingerprint(), err)
	}
	msg := []byte("{\"schedule_id\": \"deploy\"}\n")
	sig, err := s.Sign(ctx, Approval, msg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(sig), "-----BEGIN SSH SIGNATURE-----") {
		t.Fatalf("not armored: %s", sig)
	}
	if _, err := Verify([]PublicKey{pub}, Approval, msg, sig); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify([]PublicKey{pub}, Ledger, msg, sig); err == nil {
		t.Fatal("an approval signature verifies as a ledger seal")
	}

	// A literal public key signs through ssh-agent; with no agent holding
	// it, ssh-keygen's own words say why it cannot.
	lit, err := NewKeygenSigner(ctx, "key::"+pub.String())
	if err != nil {
		t.Fatal(err)
	}
	defer lit.Close()
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(t.TempDir(), "no-agent"))
	if _, err := lit.Sign(ctx, Approval, msg); err == nil || !strings.Contains(err.Error(), "ssh-keygen") {
		t.Fatalf("signed without the private key: %v", err)
	}
	if _, err := NewKeygenSigner(ctx, filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "--key") {
		t.Fatalf("a missing key: %v", err)
	}
}

// needKeygen skips a test that needs ssh-keygen, unless CI says it must
// run (.ci/run installs openssh-client and sets ASTRA_REQUIRE_SSH_KEYGEN).
func needKeygen(t *testing.T) {
	t.Helper()
	if os.Getenv("ASTRA_REQUIRE_SSH_KEYGEN") != "" {
		t.Fatal("ssh-keygen is not installed, and ASTRA_REQUIRE_SSH_KEYGEN says this test must run")
	}
	t.Skip("ssh-keygen is not installed")
}
