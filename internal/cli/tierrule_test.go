package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/model"
)

// One rule for tier 0 and money: the README, docs/design.md and `astra
// budget --help` state model.TierZeroRule, and nothing says tier 0 is free
// of the budget.
func TestTierZeroRuleIsOneRule(t *testing.T) {
	norm := func(s string) string {
		s = strings.NewReplacer("`", "", "*", "").Replace(strings.ToLower(s))
		return strings.Join(strings.Fields(s), " ")
	}
	a, _, _ := testApp(t, t.TempDir(), nil)
	help := a.budgetCmd().Long // what --help prints above the flags
	rule := norm(model.TierZeroRule)
	never := regexp.MustCompile(`never budget-limited|tier 0 is never limited|always runs`)
	for name, text := range map[string]string{"README.md": read(t, "../../README.md"), "docs/design.md": read(t, "../../docs/design.md"), "astra budget --help": help} {
		if !strings.Contains(norm(text), rule) {
			t.Errorf("%s does not state the tier-0 rule: %q", name, model.TierZeroRule)
		}
		if m := never.FindString(text); m != "" {
			t.Errorf("%s says %q", name, m)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
