package seal

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
)

func newKey(t *testing.T) (*Signer, []byte) {
	t.Helper()
	priv, _, err := Generate("test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func TestSignVerify(t *testing.T) {
	a, _ := newKey(t)
	b, _ := newKey(t)
	msg := []byte("astra ledger seal v1\nvar/schedules/2026-11.ndjson.gz\nsha256:abc\n")
	sig, err := a.Sign(Ledger, msg)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Verify([]PublicKey{b.Public(), a.Public()}, Ledger, msg, sig)
	if err != nil || k.Fingerprint() != a.Public().Fingerprint() {
		t.Fatalf("Verify = %v, %v", k.Fingerprint(), err)
	}
	armored, err := Armor(sig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify([]PublicKey{a.Public()}, Ledger, msg, armored); err != nil {
		t.Fatalf("armored: %v", err)
	}
	for name, tc := range map[string]struct {
		keys []PublicKey
		ns   string
		msg  []byte
		sig  []byte
	}{
		"another key":       {[]PublicKey{b.Public()}, Ledger, msg, sig},
		"no keys":           {nil, Ledger, msg, sig},
		"another namespace": {[]PublicKey{a.Public()}, Approval, msg, sig},
		"other bytes":       {[]PublicKey{a.Public()}, Ledger, append(bytes.Clone(msg), 'x'), sig},
		"garbage":           {[]PublicKey{a.Public()}, Ledger, msg, []byte("not a signature")},
		"cut":               {[]PublicKey{a.Public()}, Ledger, msg, sig[:len(sig)-3]},
	} {
		_, err := Verify(tc.keys, tc.ns, tc.msg, tc.sig)
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, errkind.ErrRefused) {
			t.Errorf("%s: err = %v, want a refusal wrapping ErrInvalid", name, err)
		}
		if unknown := name == "another key" || name == "no keys"; errors.Is(err, ErrUnknownKey) != unknown {
			t.Errorf("%s: err = %v, ErrUnknownKey %v", name, err, unknown)
		}
	}
}

func TestParse(t *testing.T) {
	s, _ := newKey(t)
	p, err := ParsePublicKey(s.Public().String() + " someone@laptop\n")
	if err != nil || p.Fingerprint() != s.Public().Fingerprint() {
		t.Fatalf("ParsePublicKey: %v", err)
	}
	if _, err := ParsePublicKey("ssh-ed25519 nope"); err == nil {
		t.Fatal("a bad public key parsed")
	}
	if _, err := ParseSigner([]byte("-----BEGIN OPENSSH PRIVATE KEY-----\nsecretbytes\n-----END OPENSSH PRIVATE KEY-----\n")); err == nil || strings.Contains(err.Error(), "secretbytes") {
		t.Fatalf("a bad private key: %v", err)
	}
}

// TestSSHKeygen holds the format to OpenSSH's: what `ssh-keygen -Y sign`
// makes verifies here, and what astra signs verifies with ssh-keygen.
func TestSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		needKeygen(t)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	run := func(stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(keygen, args...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run(nil, "-q", "-t", "ed25519", "-N", "", "-C", "approver@laptop", "-f", key)
	priv, _ := os.ReadFile(key)
	pubLine, _ := os.ReadFile(key + ".pub")
	pub, err := ParsePublicKey(string(pubLine))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("approve deploy @ 2026-11-23T09:00:00Z\n")
	msgFile := filepath.Join(dir, "msg")
	os.WriteFile(msgFile, msg, 0o600)
	run(nil, "-Y", "sign", "-q", "-f", key, "-n", Approval, msgFile)
	sig, _ := os.ReadFile(msgFile + ".sig")
	if _, err := Verify([]PublicKey{pub}, Approval, msg, sig); err != nil {
		t.Fatalf("ssh-keygen's signature: %v", err)
	}
	if _, err := Verify([]PublicKey{pub}, Ledger, msg, sig); err == nil {
		t.Fatal("a signature for approvals verified as a ledger seal")
	}

	s, err := ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := s.Sign(Ledger, msg)
	if err != nil {
		t.Fatal(err)
	}
	armored, _ := Armor(wire)
	sigFile := filepath.Join(dir, "astra.sig")
	os.WriteFile(sigFile, armored, 0o600)
	allowed := filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte("astra "+string(pubLine)), 0o600)
	run(msg, "-Y", "verify", "-f", allowed, "-I", "astra", "-n", Ledger, "-s", sigFile)
}
