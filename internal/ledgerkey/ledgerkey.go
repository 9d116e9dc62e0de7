// Package ledgerkey is the one place that knows how astra's ledger is
// sealed: which key signs (the ledger key, held by CI's job on the default
// branch), which keys verify (trust.ledger_keys in policies), and what
// each seal binds. It hands the lower packages the hooks they take
// (ledger.Seals for gzip members and the state snapshot, gitops.Sealing
// for commits), so they stay free of keys and formats, and signs spills
// itself.
//
// Every seal is an SSHSIG signature (namespace seal.Ledger) over a message
// whose first line names what it seals and the format's version, so that a
// seal of one kind can never pass for another:
//
//	member:   "astra ledger member v1\n" <file> "\n" <chain hash of the member's last line> "\n"
//	snapshot: "astra snapshot v1\n" <sha256 of the snapshot's bytes before its seal line> "\n"
//	commit:   "astra commit v1\n" "branch " <branch> "\n" "parent " <commit id or none> "\n"
//	          then per sealed file, sorted by path: <blob id> " " <path> "\x00"
//	spill:    "astra spill v1\n" <spill name> "\n" <sha256 of its events file> "\n"
//
// A member's seal is in its gzip header (package ledger), the snapshot's
// on its last line (package state), a commit's in its message's last line
// (Trailer: "Astra-Seal: <base64 of the signature>"), a spill's in a file
// beside its events (armored, as ssh-keygen writes signatures).
package ledgerkey

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/seal"
)

// Where the private key comes from, first found first.
const (
	EnvKey     = "ASTRA_LEDGER_KEY"      // the private key's text (the GitHub environment's secret)
	EnvKeyFile = "ASTRA_LEDGER_KEY_FILE" // a file holding it
	// KeyDir, under $XDG_CONFIG_HOME (default ~/.config), holds private
	// key files; the one whose public key policies list is used.
	KeyDir = "astra/keys"
)

// Trailer is the git trailer that carries a commit's seal.
const Trailer = "Astra-Seal"

// Domain lines: the first line of every message sealed.
const (
	domainMember   = "astra ledger member v1"
	domainSnapshot = "astra snapshot v1"
	domainCommit   = "astra commit v1"
	domainSpill    = "astra spill v2"
)

// SealedPaths are astra's files that commit seals cover: var/, except the
// approval tokens pull requests bring (they are checked against the
// ledger's records when used, and a person adds them).
var (
	SealedPaths = []string{"var/"}
	Unsealed    = []string{"var/approvals/pending/"}
)

// Keys are a sealed ledger's keys: the listed public keys, which verify,
// and the ledger key when this process holds it, which seals.
type Keys struct {
	listed []seal.PublicKey
	signer *seal.Signer // nil: verify only
	env    string       // the GitHub environment that holds the key, for messages
}

// Load reads the keys of a repository whose policies trust. It returns
// nil (and no error) when trust lists no ledger key: the ledger is not
// sealed. The private key is ASTRA_LEDGER_KEY (its text), else the file
// ASTRA_LEDGER_KEY_FILE names, else the key file under
// $XDG_CONFIG_HOME/astra/keys/ whose public key is listed; without one,
// Keys verify only (see CanSign). A key from the environment that is not
// listed is a usage error naming both sides' fingerprints. getenv is
// os.Getenv outside tests.
func Load(trust model.Trust, getenv func(string) string) (*Keys, error) {
	if !trust.Keyed() {
		return nil, nil
	}
	k := &Keys{env: trust.EnvironmentName()}
	for _, s := range trust.LedgerKeys {
		p, err := seal.ParsePublicKey(s)
		if err != nil {
			return nil, errkind.Usagef("trust.ledger_keys: %w", err)
		}
		k.listed = append(k.listed, p)
	}
	var err error
	if k.signer, err = k.find(getenv); err != nil {
		return nil, err
	}
	return k, nil
}

// New is Keys that verify with listed and sign with signer (nil: verify
// only), which must be one of them.
func New(listed []seal.PublicKey, signer *seal.Signer) (*Keys, error) {
	k := &Keys{listed: listed, env: model.DefaultEnvironment}
	if signer != nil && !k.lists(signer.Public()) {
		return nil, k.notListed("the signing key", signer.Public())
	}
	k.signer = signer
	return k, nil
}

// find is the private key the environment names, or the listed one in
// the key directory; nil when there is none.
func (k *Keys) find(getenv func(string) string) (*seal.Signer, error) {
	if text := getenv(EnvKey); strings.TrimSpace(text) != "" {
		return k.parse(EnvKey, []byte(text))
	}
	if file := getenv(EnvKeyFile); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, errkind.Usagef("%s: %w", EnvKeyFile, err)
		}
		return k.parse(EnvKeyFile+" ("+file+")", b)
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return nil, nil
		}
		dir = filepath.Join(home, ".config")
	}
	dir = filepath.Join(dir, filepath.FromSlash(KeyDir))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errkind.Usagef("reading the ledger keys in %s: %w", dir, err)
	}
	var found []*seal.Signer
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".pub") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(b) > 64<<10 {
			continue
		}
		if s, err := seal.ParseSigner(b); err == nil && k.lists(s.Public()) {
			found = append(found, s)
		}
	}
	// The first listed key wins: when rotating, policies list the new
	// key first.
	for _, p := range k.listed {
		for _, s := range found {
			if s.Public().Fingerprint() == p.Fingerprint() {
				return s, nil
			}
		}
	}
	return nil, nil
}

func (k *Keys) parse(from string, b []byte) (*seal.Signer, error) {
	s, err := seal.ParseSigner(b)
	if err != nil {
		return nil, errkind.Usagef("%s: %w", from, err)
	}
	if !k.lists(s.Public()) {
		return nil, k.notListed(from, s.Public())
	}
	return s, nil
}

func (k *Keys) lists(p seal.PublicKey) bool {
	return slices.ContainsFunc(k.listed, func(l seal.PublicKey) bool { return l.Fingerprint() == p.Fingerprint() })
}

func (k *Keys) notListed(what string, p seal.PublicKey) error {
	return errkind.New(errkind.ErrUsage,
		fmt.Errorf("%s is key %s, which trust.ledger_keys does not list (it lists %s)", what, p.Fingerprint(), strings.Join(k.Fingerprints(), ", ")),
		"set the ledger key whose public key policies list, or list this key's public key first under trust.ledger_keys: "+p.String())
}

// Fingerprints are the listed keys' SHA256 fingerprints.
func (k *Keys) Fingerprints() []string {
	out := make([]string, len(k.listed))
	for i, p := range k.listed {
		out[i] = p.Fingerprint()
	}
	return out
}

// CanSign reports whether this process holds the ledger key.
func (k *Keys) CanSign() bool { return k != nil && k.signer != nil }

// RequireSigner is nil when this process may record: the ledger is not
// sealed (k is nil) or it holds the key; else the usage error a run that
// would record stops with.
func (k *Keys) RequireSigner() error {
	if k == nil || k.signer != nil {
		return nil
	}
	return errkind.New(errkind.ErrUsage, ledger.ErrNoKey,
		fmt.Sprintf("set %s to the ledger key (the secret of the GitHub environment %q, which only the default branch's jobs get), or %s to a file holding it; "+
			"without it, use --dry-run", EnvKey, k.env, EnvKeyFile))
}

// Ledger is the hooks a sealed ledger.Store takes
// (store.Sealed(keys.Ledger())); nil for nil Keys: not sealed.
func (k *Keys) Ledger() *ledger.Seals {
	if k == nil {
		return nil
	}
	s := &ledger.Seals{Check: k.checkMember, CheckSnapshot: k.checkSnapshot}
	if k.signer != nil {
		s.Sign, s.SignSnapshot = k.signMember, k.signSnapshot
	}
	return s
}

// Commits is the sealing of astra's commits (gitops.Options.Sealing); nil
// for nil Keys.
func (k *Keys) Commits() *gitops.Sealing {
	if k == nil {
		return nil
	}
	s := &gitops.Sealing{Paths: SealedPaths, Except: Unsealed, Verify: k.verifyCommit}
	if k.signer != nil {
		s.Sign = k.signCommit
	}
	return s
}

func (k *Keys) sign(msg string) ([]byte, error) {
	if k.signer == nil {
		return nil, ledger.ErrNoKey
	}
	return k.signer.Sign(seal.Ledger, []byte(msg))
}

// verify checks sig over msg; an unlisted key's error wraps
// ledger.ErrUnknownKey.
func (k *Keys) verify(msg string, sig []byte) error {
	_, err := seal.Verify(k.listed, seal.Ledger, []byte(msg), sig)
	if errors.Is(err, seal.ErrUnknownKey) {
		return fmt.Errorf("%w: %w", ledger.ErrUnknownKey, err)
	}
	return err
}

func memberMsg(file, hash string) string { return domainMember + "\n" + file + "\n" + hash + "\n" }

func (k *Keys) signMember(file, hash string) ([]byte, error) { return k.sign(memberMsg(file, hash)) }

func (k *Keys) checkMember(file, hash string, sig []byte) error {
	return k.verify(memberMsg(file, hash), sig)
}

func snapshotMsg(data []byte) string {
	sum := sha256.Sum256(data)
	return domainSnapshot + "\n" + hex.EncodeToString(sum[:]) + "\n"
}

func (k *Keys) signSnapshot(data []byte) ([]byte, error) { return k.sign(snapshotMsg(data)) }

func (k *Keys) checkSnapshot(data, sig []byte) error { return k.verify(snapshotMsg(data), sig) }

func commitMsg(branch, parent string, entries []gitops.Entry) string {
	if parent == "" {
		parent = "none"
	}
	var b strings.Builder
	b.WriteString(domainCommit + "\nbranch " + branch + "\nparent " + parent + "\n")
	for _, e := range entries {
		b.WriteString(e.Blob + " " + e.Path + "\x00")
	}
	return b.String()
}

func (k *Keys) signCommit(branch, parent string, entries []gitops.Entry) (string, error) {
	sig, err := k.sign(commitMsg(branch, parent, entries))
	if err != nil {
		return "", err
	}
	return Trailer + ": " + base64.StdEncoding.EncodeToString(sig), nil
}

// verifyCommit checks the last Astra-Seal trailer of message.
func (k *Keys) verifyCommit(branch, parent string, entries []gitops.Entry, message string) error {
	var value string
	for _, line := range strings.Split(message, "\n") {
		if key, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(key), Trailer) {
			value = strings.TrimSpace(v)
		}
	}
	if value == "" {
		return fmt.Errorf("the commit carries no %s trailer", Trailer)
	}
	sig, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return fmt.Errorf("the %s trailer is not base64: %w", Trailer, err)
	}
	return k.verify(commitMsg(branch, parent, entries), sig)
}

func spillMsg(name string, manifest []byte) string {
	sum := sha256.Sum256(manifest)
	return domainSpill + "\n" + name + "\n" + hex.EncodeToString(sum[:]) + "\n"
}

// SignSpill seals spill name (the part after astra/spill/) by the
// manifest of its files (each file's path and sha256, its events and the
// tool writes it carries): an armored signature to store beside them.
func (k *Keys) SignSpill(name string, manifest []byte) ([]byte, error) {
	sig, err := k.sign(spillMsg(name, manifest))
	if err != nil {
		return nil, err
	}
	return seal.Armor(sig)
}

// VerifySpill checks the seal of spill name: nil when a listed key made
// it over this manifest under this name. A spill without a seal (sig
// empty) does not verify.
func (k *Keys) VerifySpill(name string, manifest, sig []byte) error {
	if len(sig) == 0 {
		return errkind.Refusedf("spill %s is not sealed", name)
	}
	if err := k.verify(spillMsg(name, manifest), sig); err != nil {
		return errkind.Refusedf("spill %s: %w", name, err)
	}
	return nil
}
