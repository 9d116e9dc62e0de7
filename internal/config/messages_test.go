package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/diag"
)

// writeRepo writes files (slash paths) into a new directory, adding nothing.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") { // an empty directory
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func load(t *testing.T, dir string) []string {
	t.Helper()
	_, diags, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range diags {
		out = append(out, d.String())
	}
	return out
}

const threeSchedules = `schedules:
  - {name: a, cron: "@daily", target_tool: deploy}
  - {name: b, cron: "@daily", target_tool: tasks_list, actor: bot}
  - {name: c, cron: "0 25 * * *", target_tool: notify}
`

// TestMissingDirectories: a missing directory is named once, and the
// unknown tools and actors that follow from a missing policies/ are not
// listed schedule by schedule; other problems still are.
func TestMissingDirectories(t *testing.T) {
	policies := "tools:\n  t: {kind: builtin}\nactors:\n  - {actor: astra, scopes: [\"*\"]}\n"
	cases := []struct {
		name  string
		files map[string]string
		want  []string // diagnostics, with DIR for the repository
	}{
		{"no policies", map[string]string{"schedules/s.yaml": threeSchedules}, []string{
			"error: no policies/ directory in DIR: astra needs the tool catalog and actors there (run `astra init` to create it, or pass --repo)",
			`schedules/s.yaml:4:24: error: hour field "25": 25 is out of range 0-23 (see ` + "`man 5 crontab`)",
		}},
		{"empty policies", map[string]string{"schedules/s.yaml": threeSchedules, "policies/": ""}, []string{
			"error: no policy files in policies/: astra needs the tool catalog and actors there (add the tool catalog and actors as policies/*.yaml; `astra init` writes examples)",
			`schedules/s.yaml:4:24: error: hour field "25": 25 is out of range 0-23 (see ` + "`man 5 crontab`)",
		}},
		{"no schedules", map[string]string{"policies/p.yaml": policies}, []string{
			"warning: no schedules/ directory in DIR: nothing will ever be due (run `astra init` to create it, or pass --repo)",
			`policies/p.yaml:2:6: error: "t" is not a builtin tool (builtin tools are tasks_list, tasks_by_trace, tasks_last_failed and budget)`,
		}},
		{"neither", map[string]string{}, []string{
			"warning: no schedules/ directory in DIR: nothing will ever be due (run `astra init` to create it, or pass --repo)",
			"warning: no policies/ directory in DIR: astra needs the tool catalog and actors there (run `astra init` to create it, or pass --repo)",
		}},
		{"empty schedules is fine", map[string]string{"schedules/": "", "policies/p.yaml": strings.Replace(policies, "builtin", "exec, command: [echo], tier: 0", 1)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeRepo(t, c.files)
			got := load(t, dir)
			var want []string
			for _, w := range c.want {
				want = append(want, strings.ReplaceAll(w, "DIR", dir))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestCronMessages: an expression that can never fire is a warning at its
// position; a cron error names the fields once; a hint lists known tools
// as tools.
func TestCronMessages(t *testing.T) {
	dir := writeRepo(t, map[string]string{
		"policies/p.yaml": basePolicies,
		"schedules/s.yaml": `schedules:
  - {name: never, cron: "0 0 31 2,4,6,9,11 *", target_tool: noop}
  - {name: short, cron: "0 9 * *", target_tool: noop}
  - {name: typo, cron: "@daily", target_tool: deploy_site}
`,
	})
	_, diags, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`schedules/s.yaml:2:26: warning: cron "0 0 31 2,4,6,9,11 *" never fires: February, April, June, September and November have no day 31 (it will never be due; check the day-of-month and month fields)`,
		`schedules/s.yaml:3:26: error: cron expression "0 9 * *" has 4 fields, want 5: minute hour day-of-month month day-of-week (see ` + "`man 5 crontab`)",
		`schedules/s.yaml:4:47: error: unknown tool "deploy_site" (known tools: budget, noop, tasks_by_trace, tasks_last_failed, tasks_list)`,
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if diags.Errors() != 2 || diags[0].Severity != diag.Warning {
		t.Errorf("a schedule that never fires must be a warning only: %v", diags)
	}
}
