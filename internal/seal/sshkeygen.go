package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
)

// KeygenSigner signs with the real `ssh-keygen -Y sign`, as people sign
// commits: with a private key file (ssh-keygen asks for its passphrase
// itself), or with a public key, file or literal, whose private half
// ssh-agent holds. astra never reads the private key.
type KeygenSigner struct {
	file string    // what -f names
	pub  PublicKey // the key that signs
	tmp  string    // a directory holding a literal key's file, removed by Close
}

// NewKeygenSigner prepares to sign with spec: a key file (private, or a
// .pub whose private half is in ssh-agent), or a literal public key
// ("ssh-ed25519 AAAA...", or git's "key::ssh-ed25519 AAAA...").
func NewKeygenSigner(ctx context.Context, spec string) (*KeygenSigner, error) {
	spec = strings.TrimSpace(spec)
	if lit := strings.TrimPrefix(spec, "key::"); strings.HasPrefix(lit, "ssh-") || strings.HasPrefix(lit, "ecdsa-") || strings.HasPrefix(lit, "sk-") {
		pub, err := ParsePublicKey(lit)
		if err != nil {
			return nil, errkind.Usage(err)
		}
		dir, err := os.MkdirTemp("", "astra-approve-")
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, "key.pub")
		if err := os.WriteFile(file, []byte(pub.String()+"\n"), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		return &KeygenSigner{file: file, pub: pub, tmp: dir}, nil
	}
	if strings.HasPrefix(spec, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			spec = filepath.Join(home, spec[2:])
		}
	}
	if _, err := os.Stat(spec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errkind.Usagef("no SSH key at %s: name yours with --key FILE (or git config user.signingkey with gpg.format ssh)", spec)
		}
		return nil, errkind.Usage(err)
	}
	pub, err := publicKeyOf(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &KeygenSigner{file: spec, pub: pub}, nil
}

// publicKeyOf is the public key of a key file: the file itself when it
// is a .pub, else the .pub beside it, else what `ssh-keygen -y` derives
// (astra does not read a private key itself).
func publicKeyOf(ctx context.Context, file string) (PublicKey, error) {
	pub := file + ".pub"
	if strings.HasSuffix(file, ".pub") {
		pub = file
	}
	if b, err := os.ReadFile(pub); err == nil {
		if k, err := ParsePublicKey(string(b)); err == nil {
			return k, nil
		}
	}
	out, err := keygen(ctx, nil, "-y", "-f", file)
	if err != nil {
		return PublicKey{}, errkind.Usagef("cannot read the public key of %s: %w", file, err)
	}
	return ParsePublicKey(string(out))
}

// Public is the key that signs.
func (s *KeygenSigner) Public() PublicKey { return s.pub }

// Sign signs msg for namespace and returns the armored signature
// (-----BEGIN SSH SIGNATURE-----).
func (s *KeygenSigner) Sign(ctx context.Context, namespace string, msg []byte) ([]byte, error) {
	out, err := keygen(ctx, msg, "-Y", "sign", "-n", namespace, "-f", s.file)
	if err != nil {
		return nil, errkind.Usagef("signing with %s: %w", s.pub.Fingerprint(), err)
	}
	if _, err := parse(out); err != nil {
		return nil, fmt.Errorf("ssh-keygen wrote no signature: %v", err)
	}
	return bytes.TrimSpace(out), nil
}

// Close removes what NewKeygenSigner wrote for a literal key.
func (s *KeygenSigner) Close() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// keygen runs ssh-keygen with stdin; a failure says what ssh-keygen said.
func keygen(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	path, err := exec.LookPath("ssh-keygen")
	if err != nil {
		return nil, errors.New("ssh-keygen is not installed (it comes with OpenSSH)")
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, errors.New("ssh-keygen: " + msg)
	}
	return stdout.Bytes(), nil
}
