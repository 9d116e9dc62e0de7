// Package model holds astra's configuration types: schedules and policies
// as read from the repository, with the defaults the seeds give.
package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
)

// Meta records where a mapping came from, and where each of its keys' values
// sit, so that later checks can point at the exact line and column.
type Meta struct {
	Pos  diag.Pos
	Keys map[string]diag.Pos
}

// Has reports whether key was written in the file.
func (m Meta) Has(key string) bool { _, ok := m.Keys[key]; return ok }

// At is the position of key's value, or of the mapping when key is absent.
func (m Meta) At(key string) diag.Pos {
	if p, ok := m.Keys[key]; ok {
		return p
	}
	return m.Pos
}

// Tier is a schedule's safety tier: 0 read-only, 1 local changes, 2 external effects.
type Tier int

const (
	TierReadOnly   Tier = 0 // no per-day run count; money counts like any tier's (gate.Admit)
	TierLocalWrite Tier = 1 // runs within a per-day budget
	TierExternal   Tier = 2 // runs only with a human approval
)

// TierZeroRule is the one rule for tier 0 and money, as README.md,
// docs/design.md and `astra budget --help` state it: gate.Admit does not
// look at the tier, and gate.Free names the runs a pause lets through.
const TierZeroRule = `Tier 0 has no per-day run count, but it spends money like any tier: its
runs are admitted against the global budget and held by a pause; only free
runs (builtin tools, max_cost_usd: 0) go on during a pause.`

var tierNames = []string{"read_only", "local_write", "external"}

func (t Tier) String() string {
	if t >= 0 && int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", int(t))
}

// parseTier accepts 0, 1, 2 or read_only, local_write, external.
func parseTier(s string) (Tier, error) {
	s = strings.TrimSpace(strings.ToLower(strings.ReplaceAll(s, "-", "_")))
	for i, n := range tierNames {
		if s == n || s == strconv.Itoa(i) {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("unknown safety tier %q: use 0 (read_only), 1 (local_write) or 2 (external)", s)
}

func (t *Tier) UnmarshalYAML(n *yaml.Node) error {
	if err := scalar(n, "safety tier"); err != nil {
		return err
	}
	v, err := parseTier(n.Value)
	*t = v
	return err
}

func (t Tier) MarshalText() ([]byte, error) { return []byte(strconv.Itoa(int(t))), nil }

// Autonomy is an actor's autonomy level. Lower is stricter.
type Autonomy int

const (
	L0Ask Autonomy = iota
	L1Draft
	L2ExecuteNotify
	L3ExecuteSilent
)

var autonomyNames = []string{"L0_Ask", "L1_Draft", "L2_ExecuteNotify", "L3_ExecuteSilent"}

func (a Autonomy) String() string {
	if a >= 0 && int(a) < len(autonomyNames) {
		return autonomyNames[a]
	}
	return fmt.Sprintf("L?(%d)", int(a))
}

// Short is the level's two-character name, L0..L3.
func (a Autonomy) Short() string { return a.String()[:2] }

// NeedsApproval is true for L0 Ask and L1 Draft.
func (a Autonomy) NeedsApproval() bool { return a <= L1Draft }

// parseAutonomy accepts L0..L3, the seed's full names (L1_Draft) and the
// bare words (ask, draft, execute_notify, execute_silent), case-insensitively.
func parseAutonomy(s string) (Autonomy, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for i, n := range autonomyNames {
		full := strings.ToLower(n)
		word := full[3:]
		if k == full || k == full[:2] || k == word || k == strings.ReplaceAll(word, "execute", "execute_") {
			return Autonomy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown autonomy level %q: use L0 (ask), L1 (draft), L2 (execute and notify) or L3 (execute silently)", s)
}

func (a *Autonomy) UnmarshalYAML(n *yaml.Node) error {
	if err := scalar(n, "autonomy level"); err != nil {
		return err
	}
	v, err := parseAutonomy(n.Value)
	*a = v
	return err
}

func (a Autonomy) MarshalText() ([]byte, error) { return []byte(a.Short()), nil }

// Risk is a tool's risk level; task policies may cap it (max_risk_level).
type Risk int

const (
	RiskLow Risk = iota
	RiskMedium
	RiskHigh
)

var riskNames = []string{"low", "medium", "high"}

func (r Risk) String() string {
	if r >= 0 && int(r) < len(riskNames) {
		return riskNames[r]
	}
	return fmt.Sprintf("risk(%d)", int(r))
}

func (r *Risk) UnmarshalYAML(n *yaml.Node) error {
	if err := scalar(n, "risk level"); err != nil {
		return err
	}
	for i, name := range riskNames {
		if strings.EqualFold(n.Value, name) || n.Value == strconv.Itoa(i+1) {
			*r = Risk(i)
			return nil
		}
	}
	return fmt.Errorf("unknown risk level %q: use low, medium or high", n.Value)
}

func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Duration is a time.Duration written as "30s", "5m", "1h30m" or "2d".
type Duration time.Duration

// D converts to time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ParseDuration extends time.ParseDuration with a whole-day unit "d".
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))
		switch {
		case err == nil && n > maxDays, errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(days, "-"):
			return 0, fmt.Errorf("duration %q is too long: at most %dd", s, maxDays)
		case err == nil && n >= 0:
			return Duration(time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit: write e.g. %ss or %sm", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit, e.g. 30s, 5m, 1h30m, 2d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(d), nil
}

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := scalar(n, "duration"); err != nil {
		return err
	}
	v, err := ParseDuration(n.Value)
	*d = v
	return err
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func scalar(n *yaml.Node, what string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("%s must be a single value", what)
	}
	return nil
}
