package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type workflowStep struct {
	ID   string            `yaml:"id"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type workflowJob struct {
	Needs       string            `yaml:"needs"`
	If          string            `yaml:"if"`
	RunsOn      string            `yaml:"runs-on"`
	Timeout     string            `yaml:"timeout-minutes"`
	Outputs     map[string]string `yaml:"outputs"`
	Concurrency map[string]any    `yaml:"concurrency"`
	Strategy    map[string]any    `yaml:"strategy"`
	Steps       []workflowStep    `yaml:"steps"`
}

type workflow struct {
	Concurrency any                    `yaml:"concurrency"`
	Jobs        map[string]workflowJob `yaml:"jobs"`
}

// initFanOut writes the scaffold with --fan-out (the action pinned to
// v1.2.3) and returns its cron workflow, raw and parsed.
func initFanOut(t *testing.T) ([]byte, workflow) {
	t.Helper()
	root := t.TempDir()
	res, err := Init(root, Options{FanOut: true, ActionVersion: "v1.2.3"})
	if err != nil || !slices.Contains(res.Created, cronWorkflow) {
		t.Fatalf("%+v %v", res, err)
	}
	raw, err := os.ReadFile(filepath.Join(root, cronWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	return raw, wf
}

// TestInitFanOut: --fan-out writes the two-job cron workflow (a plan, then
// one job per claim from its matrix) in place of the one-job workflow,
// pinned like the others.
func TestInitFanOut(t *testing.T) {
	raw, wf := initFanOut(t)
	if strings.Contains(string(raw), versionPlaceholder) || strings.Count(string(raw), "uses: astra-gitops/astra@v1.2.3\n") != 2 {
		t.Errorf("the workflow does not pin the action twice:\n%s", raw)
	}
	if wf.Concurrency != nil {
		t.Error("a workflow-wide concurrency group would hold every plan until the slowest job of the last one ends")
	}
	if len(wf.Jobs) != 2 {
		t.Errorf("jobs: %v", wf.Jobs)
	}
}

// The plan job claims and hands the matrix on; plans never cancel one
// another.
func TestFanOutPlanJob(t *testing.T) {
	_, wf := initFanOut(t)
	plan := wf.Jobs["plan"]
	if plan.Steps[1].With["command"] != "plan" || plan.Outputs["matrix"] != "${{ steps.plan.outputs.matrix }}" ||
		plan.Outputs["count"] != "${{ steps.plan.outputs.count }}" || plan.Outputs["max-parallel"] != "${{ steps.plan.outputs.max-parallel }}" {
		t.Errorf("plan job: %+v", plan)
	}
	if plan.Concurrency["group"] == nil || plan.Concurrency["cancel-in-progress"] != false {
		t.Errorf("plan job concurrency: %v", plan.Concurrency)
	}
}

// The run job is the matrix: one job per claim, on the claim's runner,
// within its time limit and concurrency group.
func TestFanOutRunJob(t *testing.T) {
	_, wf := initFanOut(t)
	run := wf.Jobs["run"]
	for k, want := range map[string]any{"fail-fast": false, "max-parallel": "${{ fromJSON(needs.plan.outputs.max-parallel) }}",
		"matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"} {
		if run.Strategy[k] != want {
			t.Errorf("run strategy %s = %v, want %v", k, run.Strategy[k], want)
		}
	}
	if run.Needs != "plan" || run.If != "needs.plan.outputs.count > 0" || run.RunsOn != "${{ matrix.runs_on }}" ||
		run.Timeout != "${{ matrix.timeout_minutes }}" || run.Concurrency["group"] != "${{ matrix.group }}" || run.Concurrency["cancel-in-progress"] != false {
		t.Errorf("run job: %+v", run)
	}
	if s := run.Steps[1]; s.With["command"] != "run" || s.Env["ASTRA_CLAIM"] != "${{ matrix.key }}" || len(s.With) != 1 {
		t.Errorf("run step: %+v (the claim goes through the environment, never through args)", s)
	}
}

// With the one-job workflow in place, switching to fan-out replaces it:
// a conflict unless forced.
func TestInitFanOutReplacesTheCronWorkflow(t *testing.T) {
	root := t.TempDir()
	if _, err := Init(root, Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := Init(root, Options{FanOut: true})
	if err != nil || !slices.Equal(res.Conflicts, []string{cronWorkflow}) {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = Init(root, Options{FanOut: true, Force: true})
	if err != nil || !slices.Equal(res.Replaced, []string{cronWorkflow}) {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestFanOutWorkflowLint runs actionlint on the fan-out workflow (CI
// installs actionlint; see TestWorkflowsLint).
func TestFanOutWorkflowLint(t *testing.T) {
	bin, err := exec.LookPath("actionlint")
	if err != nil {
		if os.Getenv("ASTRA_REQUIRE_ACTIONLINT") == "1" {
			t.Fatal("actionlint is not on PATH: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12")
		}
		t.Skip("actionlint not installed (go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12)")
	}
	root := t.TempDir()
	if _, err := Init(root, Options{FanOut: true}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, filepath.Join(root, cronWorkflow)).CombinedOutput(); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
}
