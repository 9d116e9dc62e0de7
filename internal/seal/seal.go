// Package seal signs and verifies what astra must be able to prove: that
// a ledger line, snapshot, spill or commit was written by the holder of the
// ledger key (CI's job on the default branch), and that a local approval
// was made by an approver. Keys are SSH keys and signatures are SSHSIG,
// the format of `ssh-keygen -Y sign`, so people sign with the keys and
// agents they already have and anyone can check a signature with
// `ssh-keygen -Y verify`. Each use has its own namespace, so a signature
// made for one can never be replayed as another.
package seal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/astra-gitops/astra/internal/errkind"
)

// Namespaces of astra's signatures.
const (
	// Ledger: seals of ledger members, snapshots, spills and commits.
	Ledger = "astra-ledger@astra"
	// Approval: approvals signed by an approver (`astra approve`).
	Approval = "astra-approval@astra"
)

// hash is the digest SSHSIG signs; sha512 is ssh-keygen's default.
const hash = sshsig.HashSHA512

// ErrInvalid is matched by every signature that does not verify.
var ErrInvalid = errors.New("the signature does not verify")

// ErrUnknownKey is matched (with ErrInvalid) by a signature made with a
// key that is not among the keys it was checked against: a key to list,
// or someone else's, rather than bytes that were changed.
var ErrUnknownKey = errors.New("which is not one of the keys that count here")

// PublicKey is a public SSH key, as an authorized_keys line names it.
type PublicKey struct{ key ssh.PublicKey }

// ParsePublicKey reads "ssh-ed25519 AAAA... [comment]".
func ParsePublicKey(s string) (PublicKey, error) {
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(s)))
	if err != nil {
		return PublicKey{}, errors.New(`not an SSH public key (want a line such as "ssh-ed25519 AAAA...")`)
	}
	return PublicKey{k}, nil
}

// Fingerprint is the key's SHA256 fingerprint, as ssh-keygen -l prints it.
func (p PublicKey) Fingerprint() string { return ssh.FingerprintSHA256(p.key) }

// String is the key's authorized_keys form, without a comment.
func (p PublicKey) String() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(p.key)))
}

// IsZero reports whether p holds no key.
func (p PublicKey) IsZero() bool { return p.key == nil }

// Signer holds a private key.
type Signer struct{ s ssh.Signer }

// ParseSigner reads an unencrypted private key in OpenSSH (or PEM) form.
// The error never quotes the key.
func ParseSigner(pemBytes []byte) (*Signer, error) {
	s, err := ssh.ParsePrivateKey(bytes.TrimSpace(pemBytes))
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("the private key is protected by a passphrase; astra needs an unencrypted key for the ledger")
		}
		return nil, errors.New("not an SSH private key (want the content of a file written by `ssh-keygen -t ed25519` or `astra init`)")
	}
	return &Signer{s}, nil
}

// Public is the signer's public key.
func (s *Signer) Public() PublicKey { return PublicKey{s.s.PublicKey()} }

// Sign signs msg for namespace; the result is SSHSIG's wire form.
func (s *Signer) Sign(namespace string, msg []byte) ([]byte, error) {
	sig, err := sshsig.Sign(bytes.NewReader(msg), s.s, hash, namespace)
	if err != nil {
		return nil, err
	}
	return sig.Marshal(), nil
}

// Generate makes a new Ed25519 key: the private key in OpenSSH form (what
// `ssh-keygen -t ed25519` writes) and its public key.
func Generate(comment string) (private []byte, public PublicKey, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, PublicKey{}, err
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, PublicKey{}, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, PublicKey{}, err
	}
	return pem.EncodeToMemory(block), PublicKey{sp}, nil
}

// Armor is a wire-form signature as ssh-keygen writes it
// (-----BEGIN SSH SIGNATURE-----).
func Armor(sig []byte) ([]byte, error) {
	s, err := sshsig.ParseSignature(sig)
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(s), nil
}

// Verify checks sig (wire or armored form) over msg for namespace against
// keys, and returns the key that made it. A signature by no key of keys,
// for another namespace or over other bytes is a refusal wrapping
// ErrInvalid; a signature that cannot be parsed is one too.
func Verify(keys []PublicKey, namespace string, msg, sig []byte) (PublicKey, error) {
	s, err := parse(sig)
	if err != nil {
		return PublicKey{}, errkind.Refused(fmt.Errorf("%w: %v", ErrInvalid, err))
	}
	fp := ssh.FingerprintSHA256(s.PublicKey)
	for _, k := range keys {
		if k.key == nil || ssh.FingerprintSHA256(k.key) != fp {
			continue
		}
		if err := sshsig.Verify(bytes.NewReader(msg), s, k.key, s.HashAlgorithm, namespace); err != nil {
			return PublicKey{}, errkind.Refused(fmt.Errorf("%w (key %s): %v", ErrInvalid, fp, err))
		}
		return k, nil
	}
	return PublicKey{}, errkind.Refused(fmt.Errorf("%w: it was made with key %s, %w", ErrInvalid, fp, ErrUnknownKey))
}

func parse(sig []byte) (*sshsig.Signature, error) {
	if t := bytes.TrimSpace(sig); bytes.HasPrefix(t, []byte("-----BEGIN SSH SIGNATURE-----")) {
		return sshsig.Unarmor(t)
	}
	return sshsig.ParseSignature(sig)
}
