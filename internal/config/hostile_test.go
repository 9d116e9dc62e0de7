package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

const oneSchedule = "- {name: s%d, cron: '@daily', target_tool: noop}\n"

// TestLimitsRefused: content beyond a limit is refused at its file (and
// line where there is one), saying which limit, and nothing beyond the
// limit is kept. The fuzz corpus holds the small cases; these are large.
func TestLimitsRefused(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, oneSchedule, i)
		}
		return b.String()
	}
	filler := "# " + strings.Repeat("x", 78) + "\n"
	scopes := strings.TrimSuffix(strings.Repeat("a.b, ", model.MaxListItems+1), ", ")
	aliases := "- {name: p, cron: '@daily', target_tool: noop, payload: {x: &big [" + strings.TrimSuffix(strings.Repeat("1, ", 10_000), ", ") + "]}}\n"
	for i := range 60 {
		aliases += fmt.Sprintf("- {name: s%d, cron: '@daily', target_tool: noop, payload: {x: *big}}\n", i)
	}
	cases := []struct {
		name  string
		files map[string]string
		want  string // the diagnostic, from its position on
		kept  int    // schedules kept
	}{
		{"schedules per repository", map[string]string{"schedules/s.yaml": many(model.MaxSchedules + 1)},
			"schedules/s.yaml:5001:3: error: more than 5000 schedules; this and later ones were not read", model.MaxSchedules},
		{"bytes per file", map[string]string{"schedules/s.yaml": strings.Repeat(filler, model.MaxFileBytes/len(filler)+1)},
			"schedules/s.yaml: error: this file is larger than 1048576 bytes (limit: bytes per YAML file); it was not read", 0},
		{"a 5 MB line", map[string]string{"schedules/s.yaml": "name: a\ndescription: " + strings.Repeat("x", 5<<20) + "\n"},
			"schedules/s.yaml: error: this file is larger than 1048576 bytes", 0},
		{"bytes per repository", map[string]string{"schedules/a.yaml": strings.Repeat(filler, 11_000), "schedules/b.yaml": strings.Repeat(filler, 11_000),
			"schedules/c.yaml": strings.Repeat(filler, 11_000), "schedules/d.yaml": strings.Repeat(filler, 11_000), "schedules/e.yaml": many(3) + strings.Repeat(filler, 11_000)},
			"schedules/e.yaml: error: the YAML files add up to more than 4194304 bytes (limit: bytes of configuration per repository)", 0},
		{"items per list", map[string]string{"policies/p.yaml": basePolicies + "  - {actor: bob, scopes: [" + scopes + "]}\n"},
			"policies/p.yaml:9:26: error: key \"scopes\" has 5001 items, more than the limit of 5000 items per list or mapping", 0},
		{"values, aliases counted", map[string]string{"schedules/s.yaml": aliases},
			"error: more than 500000 YAML values in schedules/ and policies/", 50},
		{"problems per file", map[string]string{"schedules/s.yaml": "name: a\n" + unknownKeys(300)},
			"schedules/s.yaml: error: 3 more problems in this file are not shown", 1},
		{"deep nesting", map[string]string{"schedules/s.yaml": "name: a\npayload: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"},
			"schedules/s.yaml:2: error: exceeded max depth of 10000", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &txtar.Archive{}
			for name, data := range c.files {
				a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(data)})
			}
			cfg, diags, err := Load(writeArchive(t, a))
			if err != nil {
				t.Fatal(err)
			}
			if !has(diags, c.want) {
				t.Fatalf("no %q in:\n%s", c.want, firstLines(diags, 8))
			}
			if len(cfg.Schedules) != c.kept {
				t.Errorf("%d schedules kept, want %d", len(cfg.Schedules), c.kept)
			}
			perFile := map[string]int{}
			for _, d := range diags {
				if perFile[d.Pos.File]++; perFile[d.Pos.File] > model.MaxFileErrors+1 {
					t.Fatalf("more than %d problems reported for %s", model.MaxFileErrors+1, d.Pos.File)
				}
			}
		})
	}
}

func unknownKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	return b.String()
}

func has(diags diag.List, want string) bool {
	for _, d := range diags {
		if strings.Contains(d.String(), want) {
			return true
		}
	}
	return false
}

func firstLines(diags diag.List, n int) string {
	return diag.ListError(diags[:min(n, len(diags))]).Error()
}

const credential = "aws_secret_access_key=AKIAIOSFODNN7EXAMPLE\n"

// TestOutsideRefused: files that lead out of the repository, or are not
// regular files, are refused by name; neither the link's target nor a byte
// of what it points to reaches a message. Links inside the repository work.
func TestOutsideRefused(t *testing.T) {
	base := t.TempDir()
	repo, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	files := map[string]string{
		"policies/p.yaml": `tools:
  noop: {kind: exec, command: [echo, ok], tier: read_only}
  stolen: {kind: exec, command: [scripts/stolen.sh], tier: read_only}
  zero: {kind: exec, command: [scripts/zero.sh], tier: read_only, rollback: [scripts/dir/x]}
  fine: {kind: exec, command: [scripts/fine.sh], tier: read_only}
actors:
  - {actor: astra, scopes: ["*"]}
`,
		"shared/common.yaml": "name: shared\ncron: \"@daily\"\ntarget_tool: noop\n",
		"scripts/real.sh":    "#!/bin/sh\n",
	}
	for name, data := range files {
		write(t, filepath.Join(repo, name), data)
	}
	write(t, filepath.Join(outside, "cred"), credential)
	must(t, os.MkdirAll(filepath.Join(outside, "x"), 0o755))
	links := map[string]string{
		"schedules/cred.yaml":   filepath.Join(outside, "cred"),
		"schedules/rel.yaml":    "../../outside/cred",
		"schedules/zero.yaml":   "/dev/zero",
		"schedules/shared.yaml": "../shared/common.yaml",
		"policies/more.yaml":    filepath.Join(outside, "cred"),
		"scripts/stolen.sh":     filepath.Join(outside, "cred"),
		"scripts/zero.sh":       "/dev/zero",
		"scripts/fine.sh":       "real.sh",
		"scripts/dir":           filepath.Join(outside, "x"),
	}
	for name, target := range links {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755))
		must(t, os.Symlink(target, filepath.Join(repo, name)))
	}
	cfg, diags, err := Load(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"policies/more.yaml: error: this file is a symlink to a file outside the repository; it was not read",
		"policies/p.yaml:3:33: error: command scripts/stolen.sh is a symlink to a file outside the repository",
		"policies/p.yaml:4:31: error: command scripts/zero.sh is a symlink to a file outside the repository",
		"policies/p.yaml:4:77: error: command scripts/dir is a symlink to a file outside the repository",
		"schedules/cred.yaml: error: this file is a symlink to a file outside the repository; it was not read",
		"schedules/rel.yaml: error: this file is a symlink to a file outside the repository; it was not read",
		"schedules/zero.yaml: error: this file is a symlink to a file outside the repository; it was not read",
	} {
		if !has(diags, want) {
			t.Errorf("missing %q", want)
		}
	}
	if diags.Errors() != 7 {
		t.Errorf("%d errors:\n%s", diags.Errors(), diag.ListError(diags))
	}
	if len(cfg.Schedules) != 1 || cfg.Schedules[0].Name != "shared" {
		t.Errorf("a link inside the repository was not followed: %d schedules", len(cfg.Schedules))
	}
	out := diag.ListError(diags).Error()
	for _, leak := range []string{"AKIA", "aws_secret", outside, base, "/dev/zero"} {
		if strings.Contains(out, leak) {
			t.Errorf("the messages show %q:\n%s", leak, out)
		}
	}
}

// TestSchedulesDirLink: schedules/ may be a link to a directory inside the
// repository (its files are named where they really are), not outside.
func TestSchedulesDirLink(t *testing.T) {
	repo := t.TempDir()
	write(t, filepath.Join(repo, "config/schedules/a.yaml"), "name: a\ncron: \"@daily\"\ntarget_tool: noop\nkey_typo: 1\n")
	write(t, filepath.Join(repo, "policies/p.yaml"), basePolicies)
	must(t, os.Symlink("config/schedules", filepath.Join(repo, "schedules")))
	_, diags, err := Load(repo)
	if err != nil || !has(diags, "config/schedules/a.yaml:4:1: error: unknown key \"key_typo\"") {
		t.Fatalf("%v %v", err, diags)
	}
}

// TestQuotedValuesRedacted: messages quote values from the files; secrets
// in them (values of secret-named environment variables, token shapes)
// are masked, since validate's output may be a public CI log.
func TestQuotedValuesRedacted(t *testing.T) {
	t.Setenv("DEPLOY_TOKEN", "s3cr3t-value-123")
	a := &txtar.Archive{Files: []txtar.File{{Name: "schedules/a.yaml", Data: []byte(`name: a
cron: "@daily"
target_tool: noop
priority: "s3cr3t-value-123"
lane: [ghp_abcdefghijklmnopqrstuvwxyz0123456789]
`)}}}
	_, diags, err := Load(writeArchive(t, a))
	if err != nil {
		t.Fatal(err)
	}
	out := diag.ListError(diags).Error()
	if diags.Errors() != 2 || strings.Contains(out, "s3cr3t") || strings.Contains(out, "ghp_") || !strings.Contains(out, "[REDACTED]") {
		t.Fatalf("%s", out)
	}
}

func write(t *testing.T, p, data string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(data), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
