package model

// DefaultEnvironment is the GitHub environment that holds the ledger key.
const DefaultEnvironment = "astra"

// Trust says what the repository's trust rests on (docs/security.md).
type Trust struct {
	Meta        Meta     `yaml:"-" json:"-"`
	LedgerKeys  []string `yaml:"ledger_keys" json:"ledger_keys,omitempty" doc:"SSH public keys (ssh-ed25519 AAAA...) of the ledger key: astra seals what it records with the private half (ASTRA_LEDGER_KEY, held by CI alone) and every run verifies the seals. List the new key first when rotating; older keys still verify what they sealed."`
	Environment string   `yaml:"environment" json:"environment,omitempty" doc:"GitHub environment holding ASTRA_LEDGER_KEY, restricted to the default branch (default astra)."`
	AcceptRisk  string   `yaml:"accept_risk" json:"accept_risk,omitempty" doc:"Why this repository runs tier-2 tools without the setup astra doctor checks; recorded on every run. Leave it out to fail closed."`
}

// Keyed reports whether the repository's ledger is sealed.
func (t Trust) Keyed() bool { return len(t.LedgerKeys) > 0 }

// EnvironmentName is Environment or its default.
func (t Trust) EnvironmentName() string {
	if t.Environment == "" {
		return DefaultEnvironment
	}
	return t.Environment
}
