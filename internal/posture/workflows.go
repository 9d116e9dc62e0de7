package posture

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/repofs"
)

// workflowsDir is where GitHub Actions reads workflows from.
const workflowsDir = ".github/workflows"

// allowedWrites are the permissions a job running astra may ask to write:
// the ledger (contents), approval pull requests and notify comments.
var allowedWrites = map[string]bool{"contents": true, "pull-requests": true, "issues": true}

// runsAstra matches a run: script that invokes astra.
var runsAstra = regexp.MustCompile(`(^|[\s;&|(/])astra\s+[a-z]`)

// whatIf matches the flags that move astra's clock: a workflow is
// production, and its runs are on the machine's clock (a run that records
// refuses --now without --test-clock; a workflow passing both would date
// what CI records by whatever it says).
var whatIf = regexp.MustCompile(`(^|[\s'"])--(now|test-clock)(=|['"\s]|$)`)

// workflowCheck is what the workflows check found.
type workflowCheck struct {
	problems   []string
	astraJobs  int
	keyJobs    int
	checkouts  int
	workflowsN int
}

func (w *workflowCheck) add(file string, line int, format string, args ...any) {
	at := file
	if line > 0 {
		at = fmt.Sprintf("%s:%d", file, line)
	}
	w.problems = append(w.problems, at+": "+fmt.Sprintf(format, args...))
}

func (p *probe) workflows() Check {
	c := Check{Name: Workflows, Title: "workflows keep credentials from tools and the key to the default branch", Tier2: true}
	env := p.in.Policies.Trust.EnvironmentName()
	c.Fix = fmt.Sprintf("in .github/workflows: `persist-credentials: false` under every actions/checkout step's with:, `environment: %s` on every job given %s, "+
		"`permissions:` writing no more than contents, pull-requests and issues on jobs that run astra, and no --now, --test-clock or ASTRA_NOW for astra "+
		"(`astra init --force` rewrites the workflows it wrote so)", env, KeyEnv)
	entries, err := repofs.ReadDir(p.in.Root, workflowsDir)
	if err != nil {
		c.Status, c.Found = Fail, "no workflows in "+workflowsDir+": nothing runs astra in CI"
		c.Fix = "astra init (it writes the workflows)"
		return c
	}
	w := &workflowCheck{}
	var names []string
	for _, e := range entries {
		if ext := path.Ext(e.Name()); e.Type().IsRegular() && (ext == ".yml" || ext == ".yaml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		rel := workflowsDir + "/" + name
		data, err := repofs.ReadFile(p.in.Root, rel, maxFileBytes)
		if err != nil {
			w.add(rel, 0, "%v", err)
			continue
		}
		w.workflowsN++
		w.check(rel, data, env)
	}
	switch {
	case w.astraJobs == 0:
		w.problems = append(w.problems, "no job in "+workflowsDir+" runs astra")
	case p.in.Policies.Trust.Keyed() && w.keyJobs == 0:
		w.problems = append(w.problems, fmt.Sprintf("no job gives astra %s, so no run in CI can record", KeyEnv))
	}
	if len(w.problems) > 0 {
		c.Status, c.Found = Fail, fmt.Sprintf("%d problem(s): %s", len(w.problems), list(w.problems, 4))
		return c
	}
	c.Status, c.Fix = Pass, ""
	c.Found = fmt.Sprintf("%d workflow(s): %d checkout(s) without persisted credentials, %d job(s) run astra within their permissions, %d get %s in environment %s",
		w.workflowsN, w.checkouts, w.astraJobs, w.keyJobs, KeyEnv, env)
	return c
}

// check looks at one workflow file.
func (w *workflowCheck) check(file string, data []byte, env string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		w.add(file, 0, "not YAML: %v", err)
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	jobs := get(root, "jobs")
	if jobs == nil || jobs.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(jobs.Content); i += 2 {
		if job := jobs.Content[i+1]; job.Kind == yaml.MappingNode {
			w.job(file, root, jobs.Content[i].Value, job, env)
		}
	}
}

// job looks at one job of a workflow whose document is root.
func (w *workflowCheck) job(file string, root *yaml.Node, id string, job *yaml.Node, env string) {
	astra := false
	for _, step := range steps(job) {
		if w.step(file, id, step) {
			astra = true
		}
	}
	if get(get(job, "env"), "ASTRA_NOW") != nil || get(get(root, "env"), "ASTRA_NOW") != nil {
		w.add(file, job.Line, "job %s sets ASTRA_NOW, which astra refuses: --now is a flag of what-if runs", id)
	}
	if mentionsKey(get(root, "env")) || mentionsKey(job) || scalar(get(job, "secrets")) == "inherit" {
		w.keyJobs++
		if name := environmentOf(job); !strings.EqualFold(name, env) {
			what := "declares no environment"
			if name != "" {
				what = "declares environment " + name
			}
			w.add(file, job.Line, "job %s gets %s but %s: the secret must come from environment %s, which only the default branch may use", id, KeyEnv, what, env)
		}
	}
	if !astra {
		return
	}
	w.astraJobs++
	perms := get(job, "permissions")
	if perms == nil {
		perms = get(root, "permissions")
	}
	if problem := permissionProblem(perms); problem != "" {
		line := job.Line
		if perms != nil {
			line = perms.Line
		}
		w.add(file, line, "job %s runs astra %s", id, problem)
	}
}

// step looks at one step of job id and reports whether it runs astra.
func (w *workflowCheck) step(file, id string, step *yaml.Node) (astra bool) {
	uses := scalar(get(step, "uses"))
	if strings.HasPrefix(strings.ToLower(uses), "actions/checkout@") {
		w.checkouts++
		if v := scalar(get(get(step, "with"), "persist-credentials")); v != "false" {
			w.add(file, step.Line, "job %s: actions/checkout keeps the token in .git/config, where tools can read it (persist-credentials: false)", id)
		}
	}
	action := strings.HasPrefix(strings.ToLower(uses), "astra-gitops/astra@")
	if run := scalar(get(step, "run")); action || runsAstra.MatchString(run) {
		astra = true
		if m := whatIf.FindStringSubmatch(run + "\n" + scalar(get(get(step, "with"), "args"))); m != nil {
			w.add(file, step.Line, "job %s passes --%s to astra: a workflow runs on the machine's clock (--now and --test-clock are for what-if runs and tests)", id, m[2])
		}
	}
	if get(get(step, "env"), "ASTRA_NOW") != nil {
		w.add(file, step.Line, "job %s sets ASTRA_NOW, which astra refuses: --now is a flag of what-if runs", id)
	}
	return astra
}

// permissionProblem says what is wrong with a job's permissions; "" when
// nothing is.
func permissionProblem(perms *yaml.Node) string {
	switch {
	case perms == nil:
		return "with no permissions: block, so its token gets the repository's default (declare contents: write, pull-requests: write, issues: write)"
	case perms.Kind == yaml.ScalarNode && perms.Value == "write-all":
		return "with write-all permissions"
	case perms.Kind != yaml.MappingNode:
		return ""
	}
	var extra []string
	for i := 0; i+1 < len(perms.Content); i += 2 {
		if k, v := perms.Content[i].Value, perms.Content[i+1].Value; v == "write" && !allowedWrites[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return "with write permissions it does not need: " + strings.Join(extra, ", ")
	}
	return ""
}

// get is the value of key in a mapping node; nil when absent.
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func steps(job *yaml.Node) []*yaml.Node {
	s := get(job, "steps")
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	return s.Content
}

// environmentOf is the environment a job declares (environment: name, or
// environment: {name: ...}).
func environmentOf(job *yaml.Node) string {
	e := get(job, "environment")
	if e != nil && e.Kind == yaml.MappingNode {
		e = get(e, "name")
	}
	return strings.TrimSpace(scalar(e))
}

// mentionsKey reports whether any value under n reads the ledger key secret.
func mentionsKey(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		v := strings.ReplaceAll(n.Value, " ", "")
		return strings.Contains(v, "secrets."+KeyEnv) || strings.Contains(v, "secrets['"+KeyEnv+"']") || strings.Contains(v, `secrets["`+KeyEnv+`"]`)
	}
	for _, c := range n.Content {
		if mentionsKey(c) {
			return true
		}
	}
	return false
}
