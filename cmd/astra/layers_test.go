package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/astra-gitops/astra/"

// layers is the import layering of docs/architecture.md, as an allowlist: each
// package may import only the astra packages listed (tests excepted).
// Adding an edge means changing the design, here and there.
var layers = map[string][]string{
	"cmd/astra":                  {"internal/cli"},
	"scripts/testsummary":        {},
	"internal/diag":              {},
	"internal/ui":                {},
	"internal/markdown":          {},
	"internal/redact":            {},
	"internal/errkind":           {},
	"internal/seal":              {},
	"internal/cron":              {},
	"internal/calendar":          {},
	"internal/repofs":            {},
	"internal/money":             {},
	"internal/inputschema":       {},
	"internal/ledger":            {"internal/money", "internal/repofs"},
	"internal/approval":          {"internal/buildinfo", "internal/model", "internal/repofs", "internal/seal"},
	"internal/gittest":           {},
	"internal/gitops":            {},
	"internal/forge":             {},
	"internal/codeowners":        {},
	"internal/buildinfo":         {},
	"internal/telemetry":         {},
	"internal/heartbeat":         {},
	"internal/scaffold":          {"internal/buildinfo"},
	"scripts/action":             {}, // tests of the GitHub Action's scripts
	"internal/model":             {"internal/cron", "internal/diag", "internal/money"},
	"internal/config":            {"internal/approval", "internal/calendar", "internal/codeowners", "internal/cron", "internal/diag", "internal/inputschema", "internal/model", "internal/money", "internal/redact", "internal/repofs", "internal/seal"},
	"internal/state":             {"internal/ledger", "internal/money", "internal/repofs"},
	"internal/ledgerkey":         {"internal/gitops", "internal/ledger", "internal/model", "internal/seal"},
	"internal/ledger/ledgertest": {"internal/ledger", "internal/money"},
	"internal/forge/githubtest":  {},
	"internal/gate":              {"internal/ledger", "internal/model", "internal/money", "internal/state"},
	"internal/plan":              {"internal/ledger", "internal/model", "internal/state"},
	"internal/introspect":        {"internal/approval", "internal/gate", "internal/ledger", "internal/model", "internal/money", "internal/plan", "internal/state"},
	"internal/memory":            {"internal/ledger", "internal/model", "internal/state"},
	"internal/sandbox":           {"internal/sandbox/launch"},
	"internal/sandbox/launch":    {},
	"internal/executor":          {"internal/ledger", "internal/model", "internal/money", "internal/redact", "internal/sandbox"},
	"internal/tools":             {"internal/introspect", "internal/ledger", "internal/model", "internal/state"},
	"internal/identity":          {"internal/model"},
	"internal/posture":           {"internal/approval", "internal/codeowners", "internal/forge", "internal/model", "internal/repofs", "internal/seal"},
	"internal/ledgerops":         {"internal/gitops", "internal/ledger", "internal/state"},
	"internal/runner": {"internal/approval", "internal/executor", "internal/forge", "internal/gate", "internal/gitops", "internal/identity",
		"internal/introspect", "internal/ledger", "internal/ledgerops", "internal/markdown", "internal/memory", "internal/model", "internal/money", "internal/plan", "internal/posture", "internal/redact", "internal/repofs",
		"internal/sandbox", "internal/state", "internal/telemetry"},
	"internal/report": {"internal/diag", "internal/introspect", "internal/ledger", "internal/model", "internal/money", "internal/runner", "internal/state",
		"internal/ui"},
	// The CLI parses flags, wires the packages together and prints; what
	// decides things lives below it (queries in introspect, git in gitops,
	// trigger authentication in identity), so it needs no gate, cron or
	// money of its own.
	"internal/cli": {"internal/approval", "internal/buildinfo", "internal/config", "internal/diag", "internal/executor", "internal/forge",
		"internal/gitops", "internal/heartbeat", "internal/identity", "internal/introspect", "internal/ledger", "internal/ledgerkey", "internal/ledgerops", "internal/memory", "internal/model", "internal/plan", "internal/posture", "internal/seal",
		"internal/redact", "internal/repofs", "internal/report", "internal/runner", "internal/sandbox", "internal/scaffold", "internal/state", "internal/telemetry",
		"internal/tools", "internal/ui"},
}

// everywhere are leaves every package may import: the error vocabulary.
var everywhere = []string{"internal/errkind"}

// thirdParty confines libraries to the one package that wraps each.
var thirdParty = map[string][]string{
	"github.com/spf13/":           {"internal/cli"},
	"github.com/go-git/":          {"internal/gitops", "internal/forge/githubtest"},
	"github.com/google/go-github": {"internal/forge", "internal/forge/githubtest"},
	"go.opentelemetry.io/":        {"internal/telemetry"},
	"github.com/landlock-lsm/":    {"internal/sandbox"},
	"golang.org/x/sys/":           {"internal/sandbox", "internal/executor"},
	"github.com/santhosh-tekuri/": {"internal/inputschema"},
}

// TestLayering holds every package to its place in the layering: a domain
// package never reaches up to the runner or the CLI, git and GitHub stay
// behind gitops and forge, and only the CLI knows about cobra and viper.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		allowed, ok := layers[name]
		if !ok {
			t.Errorf("%s is not in the layering: add it to docs/architecture.md and this test", name)
			continue
		}
		seen[name] = true
		for _, imp := range p.Imports {
			if dep, ours := strings.CutPrefix(imp, module); ours {
				if slices.Contains(everywhere, dep) {
					continue
				}
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s, which the layering does not allow", name, dep)
				}
				continue
			}
			for prefix, owners := range thirdParty {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(owners, name) {
					t.Errorf("%s imports %s; only %s may", name, imp, strings.Join(owners, ", "))
				}
			}
		}
	}
	for name := range layers {
		if !seen[name] {
			t.Errorf("the layering names %s, which does not exist", name)
		}
	}
}
