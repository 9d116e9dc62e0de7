package config

import (
	"slices"
	"strings"
	"testing"
)

// TestWritesPatterns: a tool's writes globs are checked where they are
// written; patterns that leave the repository or reach into what astra
// manages (var/, .git/, schedules/, policies/, .astra.yaml) are refused.
func TestWritesPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, want string
	}{
		{"reports/**", ""},
		{"docs/*.md", ""},
		{"out/2026-*/summary.json", ""},
		{"*.md", ""},
		{"**", "matches every path, astra's own var/ included"},
		{"**/*.md", "matches every path, astra's own var/ included"},
		{"../elsewhere/**", "escapes the repository"},
		{"reports/../../x", "escapes the repository"},
		{"/etc/**", "escapes the repository"},
		{"./reports/**", "is not written as a clean path"},
		{"reports//x", "is not written as a clean path"},
		{"var/**", "reaches into var/"},
		{"var/schedules/2026-11.ndjson.gz", "reaches into var/"},
		{"v*/x", "reaches into var/"},
		{".git/hooks/*", "reaches into .git/"},
		{"schedules/new.yaml", "reaches into schedules/"},
		{"polic?es/p.yaml", "reaches into policies/"},
		{"*", "matches .astra.yaml"},
		{".astra.yaml", "matches .astra.yaml"},
		{"reports/[", "is not a valid glob"},
	} {
		if got := checkWrites(c.pattern); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("checkWrites(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
	dir := writeRepo(t, map[string]string{
		"schedules/s.yaml": "- {name: a, cron: \"@daily\", target_tool: report}\n",
		"policies/p.yaml": `tools:
  report: {kind: exec, command: [echo], tier: 1, writes: [reports/**, var/x]}
  hook: {kind: http, url: "https://example.com", tier: 0, writes: [out/**]}
actors:
  - {actor: astra, scopes: ["*"]}
`,
	})
	got := load(t, dir)
	want := []string{
		`policies/p.yaml:2:58: error: writes pattern "var/x" reaches into var/, which astra manages (declare paths inside the repository that astra does not manage, such as reports/**)`,
		`policies/p.yaml:3:67: error: writes only applies to exec tools`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
