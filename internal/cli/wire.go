package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/astra-gitops/astra/internal/buildinfo"
	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/telemetry"
	"github.com/astra-gitops/astra/internal/tools"
	"github.com/spf13/cobra"
)

// runFlags are shared by the commands that run tools.
type runFlags struct {
	dryRun      bool
	noPush      bool
	repair      bool
	maxParallel int
	noGit       bool
	gitRequired bool // outside a git repository, only --no-git runs (set by register)
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would happen; write nothing, run only tools that support dry runs (in dry-run mode)")
	cmd.Flags().BoolVar(&f.noPush, "no-push", false, "commit the ledger locally, do not push")
	cmd.Flags().BoolVar(&f.repair, "repair", false, "cut a broken ledger tail (a run killed while writing) before appending; recorded")
	cmd.Flags().IntVar(&f.maxParallel, "max-parallel", 0, "tasks run at once (default run.max_parallel, 1)")
	cmd.Flags().BoolVar(&f.noGit, "no-git", false, "run without git (outside a repository): the ledger in var/ is written, nothing is committed or pushed")
	f.gitRequired = true
}

// redactor hides the secrets of this invocation's environment: values of
// secret-looking names, the GitHub token and the approval secret.
func (a *app) redactor() *redact.Redactor {
	return redact.FromEnv(a.environ).With(a.getenv("GITHUB_TOKEN"), a.getenv("ASTRA_APPROVAL_SECRET"), a.getenv(ledgerkey.EnvKey), a.heartbeatURL())
}

// runnerID names this runner in claims: the GitHub Actions run, or host and pid.
func (a *app) runnerID() string {
	if id := a.getenv("GITHUB_RUN_ID"); id != "" {
		return "gh-" + id + "-" + a.getenv("GITHUB_RUN_ATTEMPT") + "-" + a.getenv("GITHUB_JOB")
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// forgeClient is the GitHub client when approvals go through pull requests.
func (a *app) forgeClient() (*forge.Client, error) {
	token, repo := a.getenv("GITHUB_TOKEN"), a.getenv("GITHUB_REPOSITORY")
	if token == "" || repo == "" {
		return nil, nil
	}
	return forge.New(forge.Options{Token: token, Repository: repo, APIURL: a.getenv("GITHUB_API_URL")})
}

// githubTools avoids handing the executor a typed nil client.
func githubTools(fc *forge.Client) func(context.Context, *model.Tool, map[string]any, bool) (string, error) {
	if fc == nil {
		return nil
	}
	return tools.GitHub(fc)
}

// newRunner wires a runner for cfg: executor, git and GitHub as available.
func (a *app) newRunner(cfg *model.Config, f runFlags, filter plan.Filter, limit int) (*runner.Runner, error) {
	a.cfg = cfg
	if !f.dryRun {
		if err := a.recording(); err != nil {
			return nil, err
		}
		if err := a.requireSigner(); err != nil {
			return nil, err
		}
	}
	red := a.redactor()
	fc, err := a.forgeClient()
	if err != nil {
		return nil, err
	}
	if a.tracer, err = telemetry.Setup(context.Background(), telemetry.Options{Getenv: a.getenv, Redact: red.String, Version: buildinfo.Version()}); err != nil {
		return nil, errkind.Usagef("tracing: %w", err)
	}
	opts := runner.Options{
		Root: a.repo(), Clock: a.now, TestClock: a.testClock, DryRun: f.dryRun, Limit: limit, Filter: filter, Repair: f.repair,
		NoPush: f.noPush || !a.v.GetBool("git.push"), RunnerID: a.runnerID(), SegmentSize: a.v.GetInt64("ledger.segment_size"),
		OutputTail: a.v.GetInt("ledger.output_tail"), Secret: []byte(a.getenv("ASTRA_APPROVAL_SECRET")), Getenv: a.getenv,
		Redact: red, MaxParallel: f.maxParallel, Seals: a.ledgerSeals(), CI: a.inGitHubActions(), Tracer: a.tracer, TraceParent: a.getenv("TRACEPARENT"),
	}
	if k, _ := a.ledgerKeys(); k != nil {
		opts.VerifySpill = k.VerifySpill
		if k.CanSign() {
			opts.SignSpill = k.SignSpill
		}
	}
	if opts.MaxParallel == 0 {
		opts.MaxParallel = a.v.GetInt("run.max_parallel")
	}
	opts.Progress = &runProgress{w: a.status}
	exec := executor.New(executor.Options{Redactor: red, Builtin: tools.Builtin(cfg, a.store(), a.now), GitHub: githubTools(fc)})
	var git runner.Syncer
	if !f.dryRun && !f.noGit {
		repo, err := gitops.Open(a.gitOptions(a.v.GetString("ledger_branch")))
		switch {
		case err == nil:
			if !repo.HasRemote() {
				opts.NoPush = true
			}
			opts.StateBranch = repo.StateBranch()
			git = repo
		case errors.Is(err, gitops.ErrNotRepository) && f.gitRequired:
			return nil, &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("%s is not a git repository: astra would run tools and write "+
				"var/, but commit and push nothing", a.repo()), Hint: "Run astra in a clone of the repository, or pass --no-git to run " +
				"without git (the ledger in var/ is then the only record; nothing is committed or pushed). --dry-run needs neither."}
		case errors.Is(err, gitops.ErrNotRepository):
			// A plain directory: the ledger is written, nothing is committed
			// (the report says so).
		default:
			return nil, errkind.Default(err, errkind.ErrInfra)
		}
	}
	opts.TrustedTime, opts.Untimed = a.trustedTime(fc, git)
	var approvals runner.Forge
	if fc != nil && a.v.GetBool("github.approvals") {
		approvals = fc
	}
	if fc != nil {
		opts.Notify = fc.CommentIssueSince
	}
	opts.Posture = a.postureInput(cfg, fc)
	return runner.New(cfg, opts, exec, git, approvals), nil
}

// gitOptions opens the repository for astra's commits to branch ("":
// the checked-out branch).
func (a *app) gitOptions(branch string) gitops.Options {
	return gitops.Options{Dir: a.repo(), Remote: a.v.GetString("git.remote"), Branch: branch,
		AuthorName: a.v.GetString("git.author_name"), AuthorEmail: a.v.GetString("git.author_email"), Token: a.getenv("GITHUB_TOKEN"),
		Started: a.started, Timeout: a.v.GetDuration("git.timeout"), Budget: a.v.GetDuration("git.budget"), Sealing: a.commitSealing()}
}

// completeSchedules completes schedule names and ids for commands taking one.
func (a *app) completeSchedules(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if err := a.loadSettings(cmd); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	cfg, _, err := config.Load(a.repo())
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, s := range cfg.Schedules {
		if strings.HasPrefix(s.Name, toComplete) {
			out = append(out, s.Name+"\t"+s.Description)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
