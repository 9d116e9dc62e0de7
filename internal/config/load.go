// Package config loads schedules/**/*.yaml and policies/*.yaml from a
// repository, applies the seeds' defaults and validates everything,
// reporting each problem at its file:line:col.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// Directories astra reads, relative to the repository root.
const (
	SchedulesDir = "schedules"
	PoliciesDir  = "policies"
)

// Load reads and validates the configuration of the repository at root.
// The returned config is usable only when diags hold no errors; err is set
// only when the files cannot be read at all.
func Load(root string) (*model.Config, diag.List, error) {
	var diags diag.List
	cfg := &model.Config{}

	schedFiles, err := yamlFiles(root, SchedulesDir, true)
	if err != nil {
		return nil, nil, err
	}
	for _, rel := range schedFiles {
		docs, err := parseFile(root, rel, &diags)
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			cfg.Schedules = append(cfg.Schedules, decodeSchedules(rel, doc, &diags)...)
		}
	}

	polFiles, err := yamlFiles(root, PoliciesDir, false)
	if err != nil {
		return nil, nil, err
	}
	m := newMerger(&diags)
	for _, rel := range polFiles {
		docs, err := parseFile(root, rel, &diags)
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			var p model.Policies
			d := &decoder{file: rel, diags: &diags}
			d.decode(doc, reflect.ValueOf(&p).Elem(), "policies")
			m.add(rel, doc, &p)
		}
	}
	cfg.Policies = m.p
	policies := checkDirs(root, schedFiles, polFiles, len(cfg.Schedules), &diags)

	resolve(cfg, &diags)
	validate(root, cfg, policies, &diags)
	diags.Sort()
	return cfg, diags, nil
}

// yamlFiles lists *.yaml and *.yml under dir (slash paths relative to root).
// A missing directory is not an error: a repo may have no schedules yet.
func yamlFiles(root, dir string, recursive bool) ([]string, error) {
	var out []string
	base := filepath.Join(root, dir)
	err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == base {
				return fs.SkipDir
			}
			return err
		}
		if e.IsDir() {
			if p != base && (!recursive || strings.HasPrefix(e.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile returns the documents of one YAML file. Syntax errors become
// diagnostics; only I/O errors are returned.
func parseFile(root, rel string, diags *diag.List) ([]*yaml.Node, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			pos := diag.Pos{File: rel}
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				pos.Line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			diags.Errorf(pos, "fix the YAML syntax", "%s", msg)
			return docs, nil
		}
		if len(n.Content) > 0 && !isNull(n.Content[0]) {
			docs = append(docs, n.Content[0])
		}
	}
}

// decodeSchedules accepts a single schedule per document, a `schedules:`
// list, or a document that is a bare list of schedules.
func decodeSchedules(rel string, doc *yaml.Node, diags *diag.List) []*model.Schedule {
	d := &decoder{file: rel, diags: diags}
	list := doc
	if doc.Kind == yaml.MappingNode && len(doc.Content) >= 2 && doc.Content[0].Value == "schedules" {
		if len(doc.Content) > 2 {
			d.errorf(doc.Content[2], "put other keys inside each schedule", "a file with a schedules: list may hold nothing else")
		}
		list = doc.Content[1]
		if list.Kind != yaml.SequenceNode {
			d.errorf(list, "write `schedules:` followed by `- name: ...` items", "schedules must be a list")
			return nil
		}
	}
	switch list.Kind {
	case yaml.SequenceNode:
		var out []*model.Schedule
		for i, item := range list.Content {
			if item.Kind != yaml.MappingNode {
				d.errorf(item, "write each schedule as `key: value` lines", "schedule %d must be a mapping, not %s", i+1, kindName(item))
				continue
			}
			s := &model.Schedule{}
			d.decode(item, reflect.ValueOf(s).Elem(), fmt.Sprintf("schedule %d", i+1))
			out = append(out, s)
		}
		return out
	case yaml.MappingNode:
		s := &model.Schedule{}
		d.decode(doc, reflect.ValueOf(s).Elem(), "schedule")
		return []*model.Schedule{s}
	}
	d.errorf(doc, "write a schedule as `key: value` lines, or a list of them", "a schedule must be a mapping, not %s", kindName(doc))
	return nil
}

// merger folds per-file policies into one, refusing duplicates.
type merger struct {
	p       model.Policies
	diags   *diag.List
	budget  diag.Pos
	roleAt  map[string]diag.Pos
	actorAt map[string]diag.Pos
	tpAt    map[string]diag.Pos
}

func newMerger(diags *diag.List) *merger {
	roles := map[string][]string{} // approvers: is the older name of roles:
	return &merger{
		p:       model.Policies{Tools: map[string]*model.Tool{}, Approvers: roles, Roles: roles, Meta: model.Meta{Keys: map[string]diag.Pos{}}},
		diags:   diags,
		roleAt:  map[string]diag.Pos{},
		actorAt: map[string]diag.Pos{},
		tpAt:    map[string]diag.Pos{},
	}
}

func (m *merger) add(rel string, doc *yaml.Node, p *model.Policies) {
	keyPos := func(section, name string) diag.Pos {
		if n := lookup(doc, section, name); n != nil {
			return diag.Pos{File: rel, Line: n.Line, Col: n.Column}
		}
		return diag.Pos{File: rel}
	}
	names := make([]string, 0, len(p.Tools))
	for name := range p.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := p.Tools[name]
		if t == nil {
			t = &model.Tool{}
		}
		t.Name = name
		if t.Meta.Pos.File == "" {
			t.Meta.Pos = keyPos("tools", name)
		}
		if prev, ok := m.p.Tools[name]; ok {
			m.diags.Errorf(keyPos("tools", name), "rename or remove one", "tool %q is already defined at %s", name, prev.Meta.Pos)
			continue
		}
		m.p.Tools[name] = t
	}
	for _, tp := range p.TaskPolicies {
		if tp == nil {
			continue
		}
		k := tp.Tenant + "\x00" + tp.TaskType
		if prev, ok := m.tpAt[k]; ok {
			m.diags.Errorf(tp.Meta.Pos, "one policy per task type per tenant",
				"task policy for %q (tenant %q) is already defined at %s", tp.TaskType, tp.Tenant, prev)
			continue
		}
		m.tpAt[k] = tp.Meta.Pos
		m.p.TaskPolicies = append(m.p.TaskPolicies, tp)
	}
	for _, a := range p.Actors {
		if a == nil {
			continue
		}
		if prev, ok := m.actorAt[a.Pattern]; ok {
			m.diags.Errorf(a.Meta.Pos, "merge the two entries", "actor %q is already defined at %s", a.Pattern, prev)
			continue
		}
		m.actorAt[a.Pattern] = a.Meta.Pos
		m.p.Actors = append(m.p.Actors, a)
	}
	if p.Budget.Meta.Pos.File != "" {
		if m.budget.File != "" {
			m.diags.Errorf(p.Budget.Meta.Pos, "keep one budget: section", "the global budget is already defined at %s", m.budget)
		} else {
			m.budget = p.Budget.Meta.Pos
			m.p.Budget = p.Budget
		}
	}
	m.addIdentity(rel, doc, p)
}

// lookup finds the key node section.name in a mapping document.
func lookup(doc *yaml.Node, section, name string) *yaml.Node {
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != section {
			continue
		}
		sec := doc.Content[i+1]
		for j := 0; j+1 < len(sec.Content); j += 2 {
			if sec.Content[j].Value == name {
				return sec.Content[j]
			}
		}
	}
	return nil
}
