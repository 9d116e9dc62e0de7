package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/report"
)

// validateOptions are `astra validate`'s: it has no flags of its own.
type validateOptions struct{}

func (a *app) validateCmd() *cobra.Command {
	var o validateOptions
	return &cobra.Command{
		Use:   "validate",
		Short: "Check schedules/ and policies/ and report every problem",
		Long: `validate reads schedules/**/*.yaml and policies/*.yaml and checks types,
unknown keys, duplicate ids, cron expressions and time zones, references
(tools, actors, chain targets, approver roles), actor scopes against tool
capabilities, and tier consistency. Every problem names file:line:col.
Exit status 2 when there is any error.`,
		Example: `  astra validate
  astra validate --json
  GITHUB_ACTIONS=true astra validate   # also prints ::error annotations`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runValidate(cmd.Context(), o) },
	}
}

// runValidate is `astra validate`.
func (a *app) runValidate(_ context.Context, _ validateOptions) error {
	if err := a.requireProject(); err != nil {
		return err
	}
	cfg, diags, err := config.Load(a.repo())
	if err != nil {
		return err
	}
	diags = append(diags, shortSecrets(cfg, a.getenv)...)
	if a.json() {
		if err := a.printJSON(validateJSON(cfg, diags)); err != nil {
			return err
		}
	} else {
		for _, d := range diags {
			fmt.Fprintln(a.stdout, d)
		}
		fmt.Fprintf(a.stdout, "%s, %s, %s: %s, %s\n", count(len(cfg.Schedules), "schedule"), count(len(cfg.Policies.Tools), "tool"),
			count(len(cfg.Policies.Actors), "actor"), count(diags.Errors(), "error"), count(len(diags)-diags.Errors(), "warning"))
	}
	if a.inGitHubActions() {
		report.DiagnosticAnnotations(a.stdout, diags)
	}
	if diags.Errors() > 0 {
		return errkind.Reported(errkind.ErrUsage)
	}
	return nil
}

type diagJSON struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Hint     string `json:"hint,omitempty"`
}

func diagsJSON(diags diag.List) []diagJSON {
	out := make([]diagJSON, 0, len(diags))
	for _, d := range diags {
		out = append(out, diagJSON{d.Pos.File, d.Pos.Line, d.Pos.Col, d.Severity.String(), d.Msg, d.Hint})
	}
	return out
}

func validateJSON(cfg *model.Config, diags diag.List) any {
	return map[string]any{
		"ok":          diags.Errors() == 0,
		"schedules":   len(cfg.Schedules),
		"tools":       len(cfg.Policies.Tools),
		"actors":      len(cfg.Policies.Actors),
		"errors":      diags.Errors(),
		"diagnostics": diagsJSON(diags),
	}
}

// loadConfig loads the repository configuration for commands that act on
// it, refusing (exit 2) when it has errors: nothing runs on a broken config.
func (a *app) loadConfig() (*model.Config, error) {
	if err := a.requireProject(); err != nil {
		return nil, err
	}
	cfg, diags, err := config.Load(a.repo())
	if err != nil {
		return nil, err
	}
	if diags.Errors() > 0 {
		for _, d := range diags {
			if d.Severity == diag.Error {
				fmt.Fprintln(a.stderr, d)
			}
		}
		if a.inGitHubActions() {
			report.DiagnosticAnnotations(a.stdout, diags)
		}
		return nil, errkind.Usagef("configuration has %d error(s); nothing ran (see `astra validate`)", diags.Errors())
	}
	return cfg, nil
}

// requireProject refuses (exit 2) a repository with neither schedules/
// nor policies/: an empty directory or a wrong --repo, where "nothing is
// due" or "0 errors" would look like success.
func (a *app) requireProject() error {
	if config.IsProject(a.repo()) {
		return nil
	}
	return errkind.WithHint(errkind.Usagef("%s is not an astra project: it has no %s/ and no %s/ directory", a.repo(), config.SchedulesDir, config.PoliciesDir),
		"Run `astra init` there to start one, or pass --repo <dir> to use another repository.")
}

// minSecretLen is the length below which validate warns about a secret:
// astra hides every occurrence of a declared secret in what it records, so
// a short one is both weak and mangles ordinary output.
const minSecretLen = 8

// shortSecrets warns about secrets in this environment that are shorter
// than minSecretLen: the approval secret and what tools are handed.
func shortSecrets(cfg *model.Config, getenv func(string) string) diag.List {
	var out diag.List
	check := func(pos diag.Pos, name, whose string) {
		if v := getenv(name); v != "" && len(v) < minSecretLen {
			out.Warnf(pos, fmt.Sprintf("use at least %d characters: astra hides every occurrence of it in output, so a short one also mangles ordinary text", minSecretLen),
				"%s (%s) is %d characters long", name, whose, len(v))
		}
	}
	check(diag.Pos{}, "ASTRA_APPROVAL_SECRET", "the approval secret")
	for _, name := range slices.Sorted(maps.Keys(cfg.Policies.Tools)) {
		t := cfg.Policies.Tools[name]
		for _, env := range t.Env {
			check(t.Meta.At("env"), env, "passed to tool "+name+", redacted as a secret")
		}
		if env := t.SignatureSecretEnv; env != "" {
			check(t.Meta.At("signature_secret_env"), env, "webhook signing key of tool "+name)
		}
	}
	return out
}
