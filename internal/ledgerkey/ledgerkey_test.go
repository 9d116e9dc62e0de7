package ledgerkey

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/seal"
)

func key(t testing.TB) (priv []byte, pub seal.PublicKey) {
	t.Helper()
	priv, pub, err := seal.Generate("ledger")
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestLoad finds the listed key in each place it may be.
func TestLoad(t *testing.T) {
	priv, pub := key(t)
	otherPriv, other := key(t)
	trust := model.Trust{LedgerKeys: []string{other.String(), pub.String() + " ci@astra"}}

	if k, err := Load(model.Trust{}, env(map[string]string{EnvKey: string(priv)})); k != nil || err != nil {
		t.Fatalf("no keys listed: %v %v", k, err)
	}
	k, err := Load(trust, env(map[string]string{EnvKey: string(priv)}))
	if err != nil || !k.CanSign() || k.RequireSigner() != nil {
		t.Fatalf("from %s: %v", EnvKey, err)
	}
	file := filepath.Join(t.TempDir(), "ledger_key")
	os.WriteFile(file, priv, 0o600)
	if k, err := Load(trust, env(map[string]string{EnvKeyFile: file})); err != nil || !k.CanSign() {
		t.Fatalf("from %s: %v", EnvKeyFile, err)
	}
	// The key directory: the listed key is found among others.
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "astra", "keys")
	os.MkdirAll(dir, 0o700)
	unlisted, _ := key(t)
	os.WriteFile(filepath.Join(dir, "a_other_repo"), unlisted, 0o600)
	os.WriteFile(filepath.Join(dir, "b_this_repo"), priv, 0o600)
	os.WriteFile(filepath.Join(dir, "b_this_repo.pub"), []byte(pub.String()), 0o644)
	k, err = Load(trust, env(map[string]string{"XDG_CONFIG_HOME": cfg}))
	if err != nil || !k.CanSign() || k.signer.Public().Fingerprint() != pub.Fingerprint() {
		t.Fatalf("from the key directory: %v", err)
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".config", "astra", "keys"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "astra", "keys", "k"), otherPriv, 0o600)
	if k, err := Load(trust, env(map[string]string{"HOME": home})); err != nil || k.signer.Public().Fingerprint() != other.Fingerprint() {
		t.Fatalf("from ~/.config: %v", err)
	}

}

// TestLoadWithoutKey: verify only, and recording is refused with what to do.
func TestLoadWithoutKey(t *testing.T) {
	_, pub := key(t)
	trust := model.Trust{LedgerKeys: []string{pub.String()}}
	k, err := Load(trust, env(nil))
	if err != nil || k.CanSign() {
		t.Fatalf("without a key: %v", err)
	}
	err = k.RequireSigner()
	if !errors.Is(err, errkind.ErrUsage) || !errors.Is(err, ledger.ErrNoKey) || !strings.Contains(strings.Join(errkind.Hints(err), " "), `"astra"`) {
		t.Fatalf("RequireSigner = %v %v", err, errkind.Hints(err))
	}
	if k.Ledger().Sign != nil || k.Commits().Sign != nil || k.Ledger().Check == nil {
		t.Fatal("a verifying Keys hands out signing hooks")
	}
	var none *Keys
	if none.Ledger() != nil || none.Commits() != nil || none.RequireSigner() != nil {
		t.Fatal("nil Keys: not sealed")
	}

}

// TestLoadRefuses: a key that is not listed is a usage error naming both
// sides; so is a key that does not parse.
func TestLoadRefuses(t *testing.T) {
	priv, pub := key(t)
	_, other := key(t)
	trust := model.Trust{LedgerKeys: []string{other.String(), pub.String()}}
	_, err := Load(model.Trust{LedgerKeys: []string{other.String()}}, env(map[string]string{EnvKey: string(priv)}))
	if !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), pub.Fingerprint()) || !strings.Contains(err.Error(), other.Fingerprint()) {
		t.Fatalf("unlisted key: %v", err)
	}
	if _, err := Load(trust, env(map[string]string{EnvKey: "not a key"})); !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), EnvKey) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := Load(model.Trust{LedgerKeys: []string{"ssh-ed25519 nope"}}, env(nil)); !errors.Is(err, errkind.ErrUsage) {
		t.Fatalf("bad listed key: %v", err)
	}
}

func newKeys(t testing.TB) *Keys {
	t.Helper()
	priv, pub := key(t)
	s, err := seal.ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := New([]seal.PublicKey{pub}, s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDomains: every seal binds what it seals and what kind of seal it
// is; none passes for another.
func TestDomains(t *testing.T) {
	k := newKeys(t)
	l := k.Ledger()
	const file, hash = "var/schedules/2026-11.ndjson.gz", "0f3a"
	m, err := l.Sign(file, hash)
	if err != nil || l.Check(file, hash, m) != nil {
		t.Fatalf("member: %v", err)
	}
	for _, bad := range [][2]string{{"var/schedules/2026-12.ndjson.gz", hash}, {file, "0f3b"}} {
		if l.Check(bad[0], bad[1], m) == nil {
			t.Errorf("member seal verifies for %v", bad)
		}
	}
	snap := []byte("astra-state\t2\tshape\n")
	s, err := l.SignSnapshot(snap)
	if err != nil || l.CheckSnapshot(snap, s) != nil || l.CheckSnapshot(append(snap, 'x'), s) == nil {
		t.Fatalf("snapshot: %v", err)
	}
	events := []byte(`{"seq":1}` + "\n")
	sp, err := k.SignSpill("runner-1", events)
	if err != nil || k.VerifySpill("runner-1", events, sp) != nil || !strings.HasPrefix(string(sp), "-----BEGIN SSH SIGNATURE-----") {
		t.Fatalf("spill: %v", err)
	}
	if k.VerifySpill("runner-2", events, sp) == nil || k.VerifySpill("runner-1", append(events, 'x'), sp) == nil ||
		!errors.Is(k.VerifySpill("runner-1", events, nil), errkind.ErrRefused) {
		t.Fatal("a spill seal verifies for another spill, other events, or none")
	}
	// Across kinds: the same key, another domain.
	if l.CheckSnapshot([]byte(memberMsg(file, hash)), m) == nil || k.VerifySpill(file, []byte(hash), m) == nil {
		t.Fatal("a member seal passes for another kind")
	}
	// Another listed key's seal is damage; an unlisted one's is not.
	other := newKeys(t)
	om, _ := other.Ledger().Sign(file, hash)
	if err := l.Check(file, hash, om); !errors.Is(err, ledger.ErrUnknownKey) {
		t.Fatalf("unlisted key: %v", err)
	}
	if err := l.Check(file, "0f3b", m); err == nil || errors.Is(err, ledger.ErrUnknownKey) {
		t.Fatalf("other hash: %v", err)
	}
}

func git(t testing.TB, dir string, args ...string) string { return gittest.Must(t, dir, args...) }

// TestCommitSeals: astra's commits carry a seal over their parent, branch
// and sealed files; a commit made of a sealed commit's tree and message
// on another parent does not verify.
func TestCommitSeals(t *testing.T) {
	k := newKeys(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "root")
	r, err := gitops.Open(gitops.Options{Dir: dir, Sealing: k.Commits(), Now: func() time.Time { return time.Unix(1e9, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644)
	}
	write("var/schedules/2026-11.ndjson.gz", "one\n")
	write("var/approvals/pending/x.token", "t\n")
	s1, _, err := r.Commit("astra: run", "var/schedules/2026-11.ndjson.gz", "var/approvals/pending/x.token")
	if err != nil {
		t.Fatal(err)
	}
	if msg := git(t, dir, "log", "-1", "--format=%B"); !strings.Contains(msg, "\n"+Trailer+": ") {
		t.Fatalf("message %q", msg)
	}
	write("var/schedules/2026-11.ndjson.gz", "one\ntwo\n")
	s2, _, err := r.Commit("astra: run", "var/schedules/2026-11.ndjson.gz")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if w, err := r.NewestSealed(ctx); err != nil || w.Commit != s2 || !w.Same() {
		t.Fatalf("NewestSealed = %+v %v", w, err)
	}
	// The pending token is not sealed: an approval merged on top keeps the
	// tip sealed.
	write("var/approvals/pending/y.token", "u\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "approve")
	if w, err := r.NewestSealed(ctx); err != nil || w.Commit != s2 || !w.Same() || len(w.After) != 1 {
		t.Fatalf("after an approval: %+v %v", w, err)
	}
	// s1's tree and message on top: the ledger rewound, the seal copied.
	copied := git(t, dir, "commit-tree", s1+"^{tree}", "-p", "HEAD", "-m", git(t, dir, "log", "-1", "--format=%B", s1))
	git(t, dir, "reset", "-q", "--hard", copied)
	w, err := r.NewestSealed(ctx)
	if err != nil || w.Commit != s2 || w.Same() || len(w.After) != 2 || w.After[0].Commit != copied {
		t.Fatalf("copied seal: %+v %v", w, err)
	}
}

// BenchmarkMemberSeal: what sealing one member costs an append, and what
// checking one costs a reader (a sealed replay checks one per scan).
func BenchmarkMemberSeal(b *testing.B) {
	l := newKeys(b).Ledger()
	const file, hash = "var/schedules/2026-11.ndjson.gz", "4bf92f3577b34da6a3ce929d0e0e47364bf92f3577b34da6a3ce929d0e0e4736"
	sig, err := l.Sign(file, hash)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.Sign(file, hash); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := l.Check(file, hash, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
