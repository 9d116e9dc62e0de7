package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/state"
)

// runFlags are shared by the commands that run tools.
type runFlags struct {
	dryRun      bool
	noPush      bool
	repair      bool
	maxParallel int
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would happen; write nothing, run only tools that support dry runs (in dry-run mode)")
	cmd.Flags().BoolVar(&f.noPush, "no-push", false, "commit the ledger locally, do not push")
	cmd.Flags().BoolVar(&f.repair, "repair", false, "cut a broken ledger tail (a run killed while writing) before appending; recorded")
	cmd.Flags().IntVar(&f.maxParallel, "max-parallel", 0, "tasks run at once (default run.max_parallel, 1)")
}

// secretEnv is the environment's secret values, for redaction.
func (a *app) redactor() *redact.Redactor {
	return redact.FromEnv(os.Environ()).With(a.getenv("GITHUB_TOKEN"), a.getenv("ASTRA_APPROVAL_SECRET"))
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

// newRunner wires a runner for cfg: executor, git and GitHub as available.
func (a *app) newRunner(cfg *model.Config, f runFlags, filter plan.Filter, limit int) (*runner.Runner, error) {
	a.cfg = cfg
	red := a.redactor()
	fc, err := a.forgeClient()
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	opts := runner.Options{
		Root: a.repo(), Clock: a.clock, DryRun: f.dryRun, Limit: limit, Filter: filter, Repair: f.repair,
		NoPush: f.noPush || !a.v.GetBool("git.push"), RunnerID: a.runnerID(), SegmentSize: a.v.GetInt64("ledger.segment_size"),
		OutputTail: a.v.GetInt("ledger.output_tail"), Secret: []byte(a.getenv("ASTRA_APPROVAL_SECRET")), Getenv: a.getenv,
		Redact: red, MaxParallel: f.maxParallel,
	}
	if opts.MaxParallel == 0 {
		opts.MaxParallel = a.v.GetInt("run.max_parallel")
	}
	if a.verbose() || isTerminal(a.stderr) {
		opts.Progress = a.stderr
	}
	exec := executor.New(executor.Options{Redactor: red, Builtin: a.builtin(cfg), GitHub: githubTool(fc)})
	var git runner.Syncer
	if !f.dryRun {
		repo, err := gitops.Open(gitops.Options{Dir: a.repo(), Remote: a.v.GetString("git.remote"), Branch: a.v.GetString("ledger_branch"),
			AuthorName: a.v.GetString("git.author_name"), AuthorEmail: a.v.GetString("git.author_email"), Token: a.getenv("GITHUB_TOKEN")})
		switch {
		case err == nil:
			if !repo.HasRemote() {
				opts.NoPush = true
			}
			opts.StateBranch = repo.StateBranch()
			git = repo
		case errors.Is(err, gitops.ErrNotRepository):
			// A plain directory: the ledger is written, nothing is committed.
		default:
			return nil, withCode(ExitInfra, err)
		}
	}
	var approvals runner.Forge
	if fc != nil && a.v.GetBool("github.approvals") {
		approvals = fc
	}
	if fc != nil {
		opts.Notify = fc.CommentIssue
	}
	return runner.New(cfg, opts, exec, git, approvals), nil
}

// builtin implements the builtin tools over the ledger (seed 000 tier 0).
func (a *app) builtin(cfg *model.Config) func(context.Context, string, map[string]any) (string, error) {
	return func(_ context.Context, name string, p map[string]any) (string, error) {
		str := func(k string) string { s, _ := p[k].(string); return s }
		num := func(k string, def int) int {
			if f, ok := p[k].(float64); ok {
				return int(f)
			}
			if i, ok := p[k].(int); ok {
				return i
			}
			return def
		}
		store, now := a.store(), a.now()
		switch name {
		case model.BuiltinTasksList:
			since, err := parseSince(str("since"), now)
			if err != nil {
				return "", err
			}
			ts, err := introspect.Tasks(store, now, introspect.Query{Schedule: str("schedule"), Status: str("status"), Since: since, Limit: num("limit", 20)})
			return introspect.Text(ts), err
		case model.BuiltinTasksByTrace:
			ts, err := introspect.ByTrace(store, now, str("trace_id"))
			return introspect.Text(ts), err
		case model.BuiltinTasksLastFailed:
			ts, err := introspect.LastFailed(store, now, num("limit", 10))
			return introspect.Text(ts), err
		case model.BuiltinBudget:
			st, _, err := state.Replay(store, now)
			if err != nil {
				return "", err
			}
			b, err := json.MarshalIndent(introspect.BudgetReport(cfg, st), "", "  ")
			return string(b), err
		}
		return "", fmt.Errorf("unknown builtin tool %q", name)
	}
}

// githubTool implements kind: github tools with the forge client.
func githubTool(fc *forge.Client) func(context.Context, *model.Tool, map[string]any, bool) (string, error) {
	if fc == nil {
		return nil
	}
	return func(ctx context.Context, t *model.Tool, p map[string]any, dry bool) (string, error) {
		str := func(k string) string { s, _ := p[k].(string); return s }
		switch t.Action {
		case "create_issue":
			if dry {
				return fmt.Sprintf("would open an issue %q on %s", str("title"), fc.Repository()), nil
			}
			var labels []string
			if l, ok := p["labels"].([]any); ok {
				for _, x := range l {
					if s, ok := x.(string); ok {
						labels = append(labels, s)
					}
				}
			}
			n, url, err := fc.CreateIssue(ctx, str("title"), str("body"), labels)
			return fmt.Sprintf("opened issue #%d %s", n, url), err
		case "issue_comment":
			n, _ := p["issue"].(float64)
			if dry {
				return fmt.Sprintf("would comment on issue #%d of %s", int(n), fc.Repository()), nil
			}
			return fmt.Sprintf("commented on issue #%d", int(n)), fc.CommentIssue(ctx, int(n), str("body"), str("dedupe_key"))
		case "repository_dispatch":
			if dry {
				return fmt.Sprintf("would send repository_dispatch %q to %s", str("event_type"), fc.Repository()), nil
			}
			cp, _ := json.Marshal(p["client_payload"])
			return "dispatched " + str("event_type"), fc.RepositoryDispatch(ctx, str("event_type"), cp)
		}
		return "", fmt.Errorf("unknown github action %q", t.Action)
	}
}

func (a *app) runDueCmd() *cobra.Command {
	var f runFlags
	var filter plan.Filter
	var limit int
	var only []string
	var shard string
	cmd := &cobra.Command{
		Use:   "run-due",
		Short: "Run every schedule that is due, under every gate, and record it all",
		Long: `run-due is what the cron workflow runs. It replays the ledger, finds the
slots that became due since the last run (cron in each schedule's time zone,
intervals, retries whose backoff passed, approved requests), gates each one
(safety tier, task policy, actor scopes, autonomy, rate limits, per-day and
global budgets, approvals) and records every decision in the ledger. Runs
are claimed (and the claims pushed) before any tool starts, so concurrent
runners never run a slot twice. Then it commits and pushes the ledger.

With --dry-run nothing is written: tools that support dry runs run with
ASTRA_DRY_RUN=1, the others are shown as the exact command they would run.

Exit status: 0 fine, 1 some task failed (recorded), 2 configuration or
ledger error (nothing ran), 3 git or GitHub error after retries.`,
		Example: `  astra run-due --dry-run
  astra run-due --now 2026-11-23T09:00:00Z --dry-run --json
  astra run-due --only morning_health_check --no-push
  astra run-due --schedule-type climate.weekly_plan_suggest --tenant-id zora --limit 5
  astra run-due --shard 2/4        # this runner takes its share of the schedules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if filter.Shard, filter.Of, err = plan.ParseShard(shard); err != nil {
				return usageErrorf("%v", err)
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			for _, ref := range only {
				s := cfg.Schedule(ref)
				if s == nil {
					return usageErrorf("--only %q: no such schedule (see `astra schedules list`)", ref)
				}
				filter.Only = append(filter.Only, s.ID)
			}
			if limit == 0 {
				limit = a.v.GetInt("run.limit")
			}
			r, err := a.newRunner(cfg, f, filter, limit)
			if err != nil {
				return err
			}
			rep, err := r.RunDue(cmd.Context())
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 0, "process at most N due candidates (default run.limit, 10); the rest wait for the next run")
	cmd.Flags().StringVar(&filter.ScheduleType, "schedule-type", "", "only schedules of this type")
	cmd.Flags().StringVar(&filter.Tenant, "tenant-id", "", "only schedules of this tenant")
	cmd.Flags().StringSliceVar(&only, "only", nil, "only these schedules (ids or names, repeatable)")
	cmd.Flags().StringVar(&shard, "shard", "", "K/N: take the schedules whose id hashes to shard K of N")
	return cmd
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	var key string
	cmd := &cobra.Command{
		Use:   "run <schedule>",
		Short: "Run one schedule now (manual run), through every gate",
		Long: `run starts one run of a schedule outside its timing. Every gate still
applies: tier 2 and approval-bound tools need an approval, tier 1 counts
against the per-day budget, scopes and rate limits apply. The ledger marks
it scheduled_vs_manual: manual. The idempotency key defaults to one per
schedule per minute; a key that completed is never run again.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra run morning_health_check
  astra run autonomous_coding --idempotency-key ticket-1234
  astra run production_deploy --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			if len(key) > 256 {
				return usageErrorf("--idempotency-key is longer than 256 characters")
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			if key != "" {
				key = s.ID + "@manual:" + key
			}
			rep, err := r.Manual(cmd.Context(), s, key)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&key, "idempotency-key", "", "the run's idempotency key (seed 003); a key that completed never runs again")
	return cmd
}

// finishRun prints a run's report and maps its outcome to an exit code.
func (a *app) finishRun(rep *runner.Report, err error) error {
	if rep != nil {
		if a.json() {
			if perr := a.printJSON(rep); perr != nil {
				return perr
			}
		} else {
			printReport(a.stdout, rep, a.verbose(), a.paint())
		}
		if a.inGitHubActions() {
			writeAnnotations(a.stdout, rep)
			if werr := a.writeActionsFiles(rep); werr != nil {
				fmt.Fprintf(a.stderr, "astra: writing the job summary: %v\n", werr)
			}
		}
	}
	switch {
	case errors.Is(err, runner.ErrLedger), errors.As(err, new(*runner.UsageError)):
		return withCode(ExitUsage, err)
	case errors.Is(err, runner.ErrInfra):
		return withCode(ExitInfra, err)
	case err != nil:
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return withCode(ExitInfra, err)
	case rep == nil:
		return nil
	case rep.Failed():
		return withCode(ExitFailed, errSilent)
	}
	return nil
}

// printReport writes the human report of a run; paint colours an action.
func printReport(w io.Writer, rep *runner.Report, verbose bool, paint func(action, text string) string) {
	mode := ""
	if rep.DryRun {
		mode = " (dry run: nothing was written)"
	}
	fmt.Fprintf(w, "astra run-due at %s%s\n", rep.Now.Format(time.RFC3339), mode)
	if rep.Repaired != nil {
		fmt.Fprintf(w, "  repaired the ledger: cut %d bytes of %s, kept %d lines\n", rep.Repaired.Dropped, rep.Repaired.File, rep.Repaired.Salvaged)
	}
	if len(rep.Outcomes) == 0 {
		fmt.Fprintln(w, "  nothing is due")
	}
	for _, o := range rep.Outcomes {
		slot := ""
		if !o.Slot.IsZero() {
			slot = " @ " + o.Slot.UTC().Format("2006-01-02 15:04Z")
		}
		line := fmt.Sprintf("  %s %s%s  [%s, tier %d]", paint(o.Action, fmt.Sprintf("%-17s", o.Action)), o.Name, slot, o.Tool, o.Tier)
		var why []string
		switch {
		case o.Reason != "" && o.Detail != "":
			why = append(why, o.Reason+": "+o.Detail)
		case o.Reason != "" || o.Detail != "":
			why = append(why, o.Reason+o.Detail)
		}
		if o.PRURL != "" {
			why = append(why, o.PRURL)
		} else if o.PR != 0 {
			why = append(why, fmt.Sprintf("PR #%d", o.PR))
		}
		if !o.RetryAt.IsZero() {
			why = append(why, "retry at "+o.RetryAt.UTC().Format(time.RFC3339))
		}
		if o.DeadLettered {
			why = append(why, "dead-lettered (astra dead-letter list)")
		}
		if o.Missed > 0 {
			why = append(why, fmt.Sprintf("%d older missed slot(s) not run (catch-up policy)", o.Missed))
		}
		if o.Chain != "" {
			why = append(why, "then "+o.Chain)
		}
		if len(why) > 0 {
			line += ": " + strings.Join(why, "; ")
		}
		fmt.Fprintln(w, line)
		if o.WouldRun != "" {
			fmt.Fprintf(w, "      would run: %s\n", o.WouldRun)
		}
		if (verbose || o.Action == runner.ActionDryRun) && strings.TrimSpace(o.Output) != "" {
			for _, l := range strings.Split(strings.TrimRight(o.Output, "\n"), "\n") {
				fmt.Fprintf(w, "      | %s\n", l)
			}
		}
	}
	if rep.OverLimit > 0 {
		fmt.Fprintf(w, "  %d more due beyond --limit: the next run takes them\n", rep.OverLimit)
	}
	for _, al := range rep.Alerts {
		fmt.Fprintf(w, "  budget: %s\n", al)
	}
	fmt.Fprintf(w, "%d ran, %d failed, %d skipped, %d awaiting approval",
		rep.Count(runner.ActionRan), rep.Count(runner.ActionFailed)+rep.Count(runner.ActionLost),
		rep.Count(runner.ActionSkipped)+rep.Count(runner.ActionMissed), rep.Count(runner.ActionAwaitingApproval))
	if n := rep.Count(runner.ActionDryRun) + rep.Count(runner.ActionWouldRun); n > 0 {
		fmt.Fprintf(w, ", %d would run", n)
	}
	fmt.Fprintln(w)
	switch {
	case rep.Pushed:
		fmt.Fprintf(w, "ledger committed %s and pushed\n", short(rep.Commit))
	case rep.Commit != "":
		fmt.Fprintf(w, "ledger committed %s (not pushed)\n", short(rep.Commit))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// writeAnnotations marks failures in the GitHub Actions log.
func writeAnnotations(w io.Writer, rep *runner.Report) {
	for _, o := range rep.Outcomes {
		switch o.Action {
		case runner.ActionFailed, runner.ActionLost:
			fmt.Fprintf(w, "::error title=astra: %s failed::%s (%s) %s\n", o.Name, o.Key, o.Reason, escapeAnnotation(o.Detail))
		case runner.ActionAwaitingApproval:
			fmt.Fprintf(w, "::notice title=astra: %s awaits approval::%s\n", o.Name, escapeAnnotation(o.PRURL+" "+o.Detail))
		case runner.ActionRan:
			if o.Notify { // L2 ExecuteNotify
				fmt.Fprintf(w, "::notice title=astra: %s ran::%s %s\n", o.Name, o.Key, escapeAnnotation(strings.TrimSpace(o.Output)))
			}
		}
	}
	for _, al := range rep.Alerts {
		fmt.Fprintf(w, "::warning title=astra budget::%s\n", escapeAnnotation(al))
	}
}

func escapeAnnotation(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeActionsFiles appends the job summary to $GITHUB_STEP_SUMMARY and the
// run's counts to $GITHUB_OUTPUT (the composite action's outputs).
func (a *app) writeActionsFiles(rep *runner.Report) error {
	if p := a.getenv("GITHUB_OUTPUT"); p != "" {
		out := fmt.Sprintf("ran=%d\nfailed=%d\nskipped=%d\nawaiting_approval=%d\n", rep.Count(runner.ActionRan),
			rep.Count(runner.ActionFailed)+rep.Count(runner.ActionLost), rep.Count(runner.ActionSkipped)+rep.Count(runner.ActionMissed),
			rep.Count(runner.ActionAwaitingApproval))
		if err := appendFile(p, out); err != nil {
			return err
		}
	}
	p := a.getenv("GITHUB_STEP_SUMMARY")
	if p == "" || a.cfg == nil {
		return nil
	}
	st, _, err := state.Replay(a.store(), rep.Now)
	if err != nil {
		return err
	}
	var b strings.Builder
	report.Summary(&b, rep, a.cfg, introspect.BudgetReport(a.cfg, st))
	return appendFile(p, b.String()+"\n")
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// paint colours run actions when stdout is a terminal and NO_COLOR is not
// set (https://no-color.org); otherwise it returns the text unchanged.
func (a *app) paint() func(action, text string) string {
	if a.getenv("NO_COLOR") != "" || a.json() || !isTerminal(a.stdout) {
		return func(_, text string) string { return text }
	}
	return func(action, text string) string {
		code := map[string]string{
			runner.ActionRan: "32", runner.ActionFailed: "31", runner.ActionLost: "31", runner.ActionAwaitingApproval: "33",
			runner.ActionDryRun: "36", runner.ActionWouldRun: "36",
		}[action]
		if code == "" {
			code = "2" // skipped, missed: dim
		}
		return "\x1b[" + code + "m" + text + "\x1b[0m"
	}
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
