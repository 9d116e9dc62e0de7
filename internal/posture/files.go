package posture

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/codeowners"
	"github.com/astra-gitops/astra/internal/repofs"
)

// The checks the repository's files answer.

// maxFileBytes bounds what a check reads of one file.
const maxFileBytes = 1 << 20

// maxWalk bounds how many files of a directory the CODEOWNERS check looks
// at; beyond it, the probes stand for the rest.
const maxWalk = 10000

// owned are the paths CODEOWNERS must give an owner: everything that
// decides what runs, as whom, and who may approve it. Each directory is
// checked with the files it has and with new files a writer could add
// (probes), since a rule like /schedules/*.yaml leaves schedules/x.yml out.
var owned = []struct {
	dir    string // "" for a single file
	file   string
	probes []string
}{
	{dir: "schedules", probes: []string{"new.yaml", "new.yml", "team/new.yaml"}},
	{dir: "policies", probes: []string{"new.yaml", "new.yml", "team/new.yaml"}},
	{file: ".astra.yaml"},
	{dir: ".github", probes: []string{"workflows/new.yml", "workflows/new.yaml", "actions/new/action.yml", "CODEOWNERS"}},
}

func (p *probe) codeOwners() Check {
	c := Check{Name: CodeOwners, Title: "CODEOWNERS covers schedules, policies, tool scripts, workflows and itself", Tier2: true}
	file, data, err := p.findCodeOwners()
	if err != nil {
		c.Status, c.Found = Fail, err.Error()
		c.Fix = "astra init --owner @your-org/your-team (it appends the lines), or add them to .github/CODEOWNERS by hand"
		return c
	}
	co := codeowners.Parse(file, data)
	problems := co.Skipped
	var paths []string
	for _, o := range owned {
		if o.dir == "" {
			paths = append(paths, o.file)
			continue
		}
		paths = append(paths, p.filesUnder(o.dir)...)
		for _, pr := range o.probes {
			paths = append(paths, o.dir+"/"+pr)
		}
	}
	// The file GitHub uses, and every place that would take precedence
	// over it if someone created it there.
	for _, cand := range codeowners.Files {
		paths = append(paths, cand)
		if cand == file {
			break
		}
	}
	tools := p.toolFiles()
	paths = append(paths, tools...)
	var missing []string
	seen := map[string]bool{}
	for _, f := range paths {
		if seen[f] {
			continue
		}
		seen[f] = true
		if owners, _ := co.Owners(f); len(owners) == 0 {
			missing = append(missing, f)
		}
	}
	found := fmt.Sprintf("%s: %d rule(s)", file, len(co.Rules))
	if len(problems) > 0 {
		found += fmt.Sprintf(", %d line(s) GitHub skips (%s)", len(problems), problems[0])
	}
	if len(missing) == 0 {
		c.Status, c.Found = Pass, found+fmt.Sprintf("; schedules/, policies/, .astra.yaml, .github/, %d tool file(s) and CODEOWNERS have owners", len(tools))
		return c
	}
	c.Status = Fail
	c.Found = found + fmt.Sprintf("; %d path(s) without an owner: %s", len(missing), list(missing, 6))
	c.Fix = fmt.Sprintf("add owners for them to %s, e.g. %s", file, strings.Join(ownerLines(missing, ownerOf(co)), "  "))
	return c
}

// findCodeOwners returns the CODEOWNERS file GitHub uses.
func (p *probe) findCodeOwners() (string, []byte, error) {
	for _, cand := range codeowners.Files {
		data, err := repofs.ReadFile(p.in.Root, cand, maxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return cand, nil, fmt.Errorf("%s: %v", cand, err)
		}
		return cand, data, nil
	}
	return "", nil, fmt.Errorf("no CODEOWNERS file (%s): anyone who may merge can change what runs", strings.Join(codeowners.Files, ", "))
}

// filesUnder lists the regular files under dir (slash paths), at most
// maxWalk of them.
func (p *probe) filesUnder(dir string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(p.in.Root, dir), func(f string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= maxWalk {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if rel, err := filepath.Rel(p.in.Root, f); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return out
}

// toolFiles are the repository files tool entries run or load (what
// their approvals bind), with a probe for a new file in each directory
// bound whole, which a writer could add and a script could load.
func (p *probe) toolFiles() []string {
	var out []string
	names := make([]string, 0, len(p.in.Policies.Tools))
	for n := range p.in.Policies.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		files, dirs, _ := approval.ToolFiles(p.in.Root, p.in.Policies.Tools[n])
		out = append(out, files...)
		for _, d := range dirs {
			out = append(out, d+"/new.sh")
		}
	}
	return out
}

// ownerOf picks the owner to suggest: the one most rules name.
func ownerOf(co *codeowners.File) string {
	count := map[string]int{}
	best := "@OWNER"
	for _, r := range co.Rules {
		for _, o := range r.Owners {
			count[o]++
			if count[o] > count[best] || (count[o] == count[best] && o < best) {
				best = o
			}
		}
	}
	return best
}

// ownerLines are the CODEOWNERS lines that own missing: its directory
// for what is under one of owned's, the path itself otherwise.
func ownerLines(missing []string, owner string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range missing {
		line := "/" + m
		for _, o := range owned {
			if o.dir != "" && strings.HasPrefix(m, o.dir+"/") {
				line = "/" + o.dir + "/"
			}
		}
		if !seen[line] {
			seen[line] = true
			out = append(out, "`"+line+" "+owner+"`")
		}
	}
	return out
}

// list names at most n items.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
