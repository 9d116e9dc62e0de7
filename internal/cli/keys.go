package cli

import (
	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/posture"
)

// ledgerKeys are the repository's ledger keys (nil: policies list none,
// the ledger is not sealed), loaded once per invocation from the
// policies' trust section and the environment (ledgerkey.Load).
func (a *app) ledgerKeys() (*ledgerkey.Keys, error) {
	if a.keysLoaded {
		return a.keys, a.keysErr
	}
	a.keysLoaded = true
	cfg := a.cfg
	if cfg == nil {
		c, diags, err := config.Load(a.repo())
		if err != nil || diags.Errors() > 0 {
			// Without policies that can be read, whether the ledger is
			// sealed is unknown: nothing records until they can be.
			a.keysErr = errkind.Usagef("the policies cannot be read, so astra cannot tell whether the ledger is sealed (run `astra validate`)")
			return nil, a.keysErr
		}
		cfg = c
	}
	a.keys, a.keysErr = ledgerkey.Load(cfg.Policies.Trust, a.getenv)
	return a.keys, a.keysErr
}

// requireSigner is asked by every command that records: in a repository
// whose ledger is sealed, only a process holding the ledger key records
// (dry runs and read commands need none).
func (a *app) requireSigner() error {
	k, err := a.ledgerKeys()
	if err != nil {
		return err
	}
	return k.RequireSigner()
}

// ledgerSeals are the seal hooks of the ledger's stores; nil when the
// ledger is not sealed (or, for a read command, when the keys cannot be
// loaded: it then reads as it always did).
func (a *app) ledgerSeals() *ledger.Seals {
	k, err := a.ledgerKeys()
	if err != nil {
		return nil
	}
	return k.Ledger()
}

// commitSealing seals astra's commits and checks the seals of the
// commits it reads; nil when the ledger is not sealed.
func (a *app) commitSealing() *gitops.Sealing {
	k, err := a.ledgerKeys()
	if err != nil {
		return nil
	}
	return k.Commits()
}

// postureKey is what doctor and the tier-2 gate know of the ledger key,
// from the one loader.
func (a *app) postureKey() posture.Key {
	k, err := a.ledgerKeys()
	if err != nil {
		return posture.Key{Set: true, Problem: err.Error()}
	}
	return posture.Key{Set: k.CanSign() || a.getenv(ledgerkey.EnvKey) != "" || a.getenv(ledgerkey.EnvKeyFile) != "", Held: k.CanSign()}
}
