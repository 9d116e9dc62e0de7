// Package launch is the launcher tools start through (see package
// sandbox): astra run again with Env set becomes the tool here, in an init
// that needs nothing but the standard library. Go initialises a package as
// soon as what it imports is, so the launcher runs before the rest of
// astra (git, GitHub, telemetry, the CLI) initialises: a tool's start pays
// for the Go runtime and this, not for all of astra.
package launch

// Env names the launch spec of a tool: astra run again with it set is the
// launcher, which becomes the tool.
const Env = "ASTRA_INTERNAL_SANDBOX"

// RulesetFD is the launcher's descriptor of the Landlock ruleset astra
// made for the tool (its first extra file), when Spec.Ruleset says so.
const RulesetFD = 3

// Spec is what the launcher is told: the tool's program and argv, and
// whether a ruleset restricts it (with the flags of landlock_restrict_self).
type Spec struct {
	Path          string   `json:"path"`
	Args          []string `json:"args"`
	Ruleset       bool     `json:"ruleset,omitempty"`
	RestrictFlags int      `json:"restrict_flags,omitempty"`
}
