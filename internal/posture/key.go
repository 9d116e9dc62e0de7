package posture

import (
	"fmt"
)

// KeyEnv is the environment variable that holds the ledger key's private
// half in CI.
const KeyEnv = "ASTRA_LEDGER_KEY"

// Key is what this process holds of the ledger key, as package
// ledgerkey's loader found it (the CLI fills it in: one loader).
type Key struct {
	Set     bool   // a private key was given (ASTRA_LEDGER_KEY or its file)
	Held    bool   // this process holds one of trust.ledger_keys' keys
	Problem string // why a key that is set is not held
}

func (p *probe) ledgerKey() Check {
	c := Check{Name: LedgerKey, Title: "ledger key configured and held", Tier2: true}
	trust := p.in.Policies.Trust
	env := trust.EnvironmentName()
	setSecret := fmt.Sprintf("gh secret set %s --env %s < <private key file>", KeyEnv, env)
	switch k := p.in.Key; {
	case !trust.Keyed():
		c.Status, c.Found = Fail, "policies list no trust.ledger_keys: the ledger is not sealed, so anyone who can push can rewrite it"
		c.Fix = "astra init (it generates the key, lists its public half in policies and prints how to store the private half), then " + setSecret
	case k.Held:
		c.Status, c.Found = Pass, fmt.Sprintf("%s holds one of the %d key(s) trust.ledger_keys lists", KeyEnv, len(trust.LedgerKeys))
	case k.Set:
		c.Status, c.Found = Fail, k.Problem
		c.Fix = "store the private half of a key trust.ledger_keys lists: " + setSecret
	case p.in.Run:
		c.Status, c.Found = Fail, fmt.Sprintf("this run does not hold the ledger key (%s is not set)", KeyEnv)
		c.Fix = fmt.Sprintf("give the job that runs astra `environment: %s` and `%s: ${{ secrets.%s }}`, and %s", env, KeyEnv, KeyEnv, setSecret)
	default:
		c.Status = Warn
		c.Found = fmt.Sprintf("trust.ledger_keys lists %d key(s); this shell does not hold the private half (%s), as expected outside CI", len(trust.LedgerKeys), KeyEnv)
	}
	return c
}
