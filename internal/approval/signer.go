package approval

import (
	"context"

	"github.com/astra-gitops/astra/internal/seal"
)

// Signer signs tokens as an approver, with ssh-keygen and the person's
// own key (seal.KeygenSigner): astra never holds it.
type Signer struct{ k *seal.KeygenSigner }

// NewSigner prepares to sign with spec: a private key file, a public key
// file or literal whose private half ssh-agent holds.
func NewSigner(ctx context.Context, spec string) (*Signer, error) {
	k, err := seal.NewKeygenSigner(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &Signer{k}, nil
}

// Fingerprint is the signing key's SHA256 fingerprint.
func (s *Signer) Fingerprint() string { return s.k.Public().Fingerprint() }

// PublicKey is the signing key's authorized_keys line, as signing_keys
// lists it.
func (s *Signer) PublicKey() string { return s.k.Public().String() }

// Sign sets t's approver signature.
func (s *Signer) Sign(ctx context.Context, t *Token) error {
	sig, err := s.k.Sign(ctx, seal.Approval, t.SignedBytes())
	if err != nil {
		return err
	}
	t.ApproverSignature = string(sig)
	return nil
}

// Close releases what NewSigner prepared.
func (s *Signer) Close() { s.k.Close() }
