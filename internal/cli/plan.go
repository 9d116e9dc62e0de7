package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/ui"
)

// planOptions are plan's flags.
type planOptions struct {
	run    runFlags
	filter plan.Filter
	limit  int
	only   []string
	runsOn []string
}

func (a *app) planCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Claim what is due for a GitHub Actions job matrix (fan-out); run nothing",
		Long: `plan decides what is due exactly as run-due does (every gate, every
decision recorded) and claims it, pushing the claims before it ends, but runs
nothing: each claim becomes one job of a GitHub Actions matrix, and each job
runs its task with 'astra run --claim KEY'. The workflow 'astra init
--fan-out' writes runs it every 5 minutes.

In GitHub Actions it writes the step outputs matrix (the jobs, as
{"include": [...]}), count and max_parallel; elsewhere it prints the jobs
(--json: the same as JSON). Each job names its claim (key), its schedule,
its runner labels (runs_on: the schedule's, else its tool's, else --runs-on),
a concurrency group (its lane's, else its own) and a timeout (its wall
clock, chained steps included, plus 10 minutes).

A plan processes --limit due candidates (run.limit, 10, unless given; at
most 256, the jobs one matrix may hold); what is due beyond that waits for
the next plan, and so do lane-mates of a task it claimed: one job per lane
at a time. Claims allow for the jobs
queued ahead of them (--max-parallel at once); a job that never starts
leaves its claim to expire, and a later plan records it lost and retries it.

Exit status: 0 once the claims are pushed and the matrix written (a git or
GitHub failure the plan outlived is shown as an error: failing the job
would strand the claims), 2 configuration or ledger error, 3 git or GitHub
error before the claims were out (nothing claimed).`,
		Example: `  astra plan --dry-run
  astra plan --json --max-parallel 8
  astra plan --runs-on self-hosted --runs-on linux --limit 256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runPlan(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.run.dryRun, "dry-run", false, "show what would be claimed; claim nothing, write an empty matrix")
	f.BoolVar(&o.run.noPush, "no-push", false, "commit the claims locally, do not push")
	f.BoolVar(&o.run.repair, "repair", false, "cut a broken ledger tail (a run killed while writing) before appending; recorded")
	f.IntVar(&o.run.maxParallel, "max-parallel", 0, "jobs the matrix runs at once: its max-parallel, and what claim deadlines allow for (default run.max_parallel)")
	f.IntVar(&o.limit, "limit", 0, "process at most N due candidates (default run.limit, 10; at most 256, the jobs of one matrix); the rest wait for the next plan")
	f.StringSliceVar(&o.runsOn, "runs-on", nil, "runner label(s) of jobs whose schedule and tool name none (default ubuntu-latest)")
	f.StringVar(&o.filter.ScheduleType, "schedule-type", "", "only schedules of this type")
	a.tenantFlag(cmd, &o.filter.Tenant, "only schedules of this tenant")
	f.StringSliceVar(&o.only, "only", nil, "only these schedules (ids or names, repeatable)")
	return cmd
}

// runPlan is `astra plan`.
func (a *app) runPlan(ctx context.Context, o planOptions) error {
	if o.limit == 0 {
		o.limit = a.v.GetInt("run.limit")
	}
	if o.limit < 1 || o.limit > runner.MatrixLimit {
		return errkind.Usagef("--limit %d: a plan claims 1 to %d tasks, the jobs one GitHub Actions matrix may hold", o.limit, runner.MatrixLimit)
	}
	for _, l := range o.runsOn {
		if !model.ValidLabel(l) {
			return errkind.Usagef("--runs-on %q is not a runner label: letters, digits, _ . - (at most 100)", l)
		}
	}
	if len(o.runsOn) > model.MaxRunnerLabels {
		return errkind.Usagef("--runs-on: at most %d labels", model.MaxRunnerLabels)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if o.filter.Only, err = onlyIDs(cfg, o.only); err != nil {
		return err
	}
	if o.run.maxParallel == 0 {
		o.run.maxParallel = a.v.GetInt("run.max_parallel")
	}
	r, err := a.newRunner(cfg, o.run, o.filter, o.limit)
	if err != nil {
		return err
	}
	p, err := r.Plan(ctx, runner.PlanOptions{MaxParallel: o.run.maxParallel, RunsOn: o.runsOn})
	if p == nil {
		return err
	}
	// A dry run claims nothing, so its matrix must run nothing.
	jobs := p.Jobs
	if o.run.dryRun {
		jobs = nil
	}
	matrix := runner.Matrix(jobs)
	if a.json() {
		out := planJSON{Matrix: matrix, Count: len(jobs), MaxParallel: p.MaxParallel, Report: p.Report}
		if o.run.dryRun {
			out.WouldClaim = p.Jobs
		}
		if perr := a.printJSON(out); perr != nil {
			return perr
		}
	} else {
		report.Terminal(a.stdout, p.Report, a.verbose(), a.paint())
		a.printJobs(p, o.run.dryRun)
	}
	if a.inGitHubActions() {
		report.Annotations(a.stdout, p.Report)
		if werr := a.writeActionsFiles(p.Report); werr != nil {
			fmt.Fprintf(a.stderr, "astra: writing the job summary: %v\n", werr)
		}
		if werr := ui.WriteOutputs(a.getenv("GITHUB_OUTPUT"), ui.Output{Name: "matrix", Value: string(matrix)},
			ui.Output{Name: "count", Value: strconv.Itoa(len(jobs))}, ui.Output{Name: "max_parallel", Value: strconv.Itoa(p.MaxParallel)}); werr != nil {
			return errkind.Infraf("writing the matrix to GITHUB_OUTPUT: %w", werr)
		}
	}
	if err != nil && len(jobs) > 0 {
		// The claims are out and the matrix written: the jobs must run, so
		// the plan does not fail; what it outlived is shown.
		fmt.Fprintf(a.stderr, "astra: error after the claims were pushed (the jobs run them): %v\n", err)
		if a.inGitHubActions() {
			_ = ui.Annotate(a.stdout, ui.Annotation{Level: ui.Error, Title: "astra plan", Message: err.Error()})
		}
		return nil
	}
	return err
}

// planJSON is what plan prints with --json.
type planJSON struct {
	Matrix      json.RawMessage `json:"matrix"` // {"include": [...]}, empty in a dry run
	Count       int             `json:"count"`
	MaxParallel int             `json:"max_parallel"`
	WouldClaim  []runner.Job    `json:"would_claim,omitempty"` // a dry run's jobs
	Report      *runner.Report  `json:"report"`
}

// printJobs lists the matrix for people.
func (a *app) printJobs(p *runner.Plan, dryRun bool) {
	switch {
	case len(p.Jobs) == 0:
		fmt.Fprintln(a.stdout, "job matrix: empty, no job runs")
		return
	case dryRun:
		fmt.Fprintf(a.stdout, "job matrix (dry run: nothing was claimed, the matrix written is empty): %d job(s) would run, %d at once\n", len(p.Jobs), p.MaxParallel)
	default:
		fmt.Fprintf(a.stdout, "job matrix: %d job(s), %d at once\n", len(p.Jobs), p.MaxParallel)
	}
	for _, j := range p.Jobs {
		fmt.Fprintf(a.stdout, "  astra run --claim %s  [runs-on %s, group %s, timeout %dm]\n", j.Key, strings.Join(j.RunsOn, ","), j.Group, j.Timeout)
	}
}

// runClaim is `astra run --claim KEY` (default $ASTRA_CLAIM): the job of a
// plan's matrix runs the task its plan claimed.
func (a *app) runClaim(ctx context.Context, o runOptions) error {
	switch {
	case o.schedule != "" && o.claim != "":
		return errkind.Usagef("give a schedule or --claim, not both")
	case o.key != "":
		return errkind.Usagef("--idempotency-key names a manual run; a claim is run by its own key (--claim)")
	}
	claim := o.claim
	if claim == "" {
		claim = strings.TrimSpace(a.getenv("ASTRA_CLAIM"))
	}
	if claim == "" {
		return errkind.Usagef("run needs a schedule, or --claim KEY (a claim of astra plan)")
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	rep, err := r.RunClaim(ctx, claim)
	return a.finishRun(rep, err)
}
