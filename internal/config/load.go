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
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/repofs"
)

// Directories astra reads, relative to the repository root.
const (
	SchedulesDir = "schedules"
	PoliciesDir  = "policies"
)

// Load reads and validates the configuration of the repository at root.
// The returned config is usable only when diags hold no errors; err is set
// only when the files cannot be read at all, and is of kind
// errkind.ErrUsage: nothing can run on a configuration astra cannot read.
// Every file read is a regular file inside the repository
// (internal/repofs), and the work is bounded by the limits in
// internal/model, whatever the files hold.
func Load(root string) (*model.Config, diag.List, error) {
	cfg, diags, err := loadFiles(root)
	return cfg, diags, errkind.Usage(err)
}

func loadFiles(root string) (*model.Config, diag.List, error) {
	l := &loader{root: root, cfg: &model.Config{}}
	cfg, diags := l.cfg, &l.diags

	schedFiles, _, err := l.yamlFiles(SchedulesDir, true)
	if err != nil {
		return nil, nil, err
	}
	polFiles, _, err := l.yamlFiles(PoliciesDir, false)
	if err != nil {
		return nil, nil, err
	}
	for _, rel := range schedFiles {
		docs, err := l.parseFile(rel)
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			l.decodeSchedules(rel, doc)
		}
	}

	m := newMerger(diags)
	for _, rel := range polFiles {
		docs, err := l.parseFile(rel)
		if err != nil {
			return nil, nil, err
		}
		for _, doc := range docs {
			var p model.Policies
			d := l.decoder(rel)
			d.decode(doc, reflect.ValueOf(&p).Elem(), "policies")
			m.add(rel, doc, &p)
		}
	}
	cfg.Policies = m.p
	policies := checkDirs(root, schedFiles, polFiles, len(cfg.Schedules), diags)

	applyTemplates(cfg, diags)
	resolve(cfg, diags)
	resolveWindows(root, cfg, diags)
	validate(root, cfg, policies, diags)
	redactAll(l.diags, redact.FromEnv(os.Environ()))
	l.diags.Sort()
	return cfg, capPerFile(unique(l.diags)), nil
}

// unique drops repeated problems: a bad value in a template is found once
// for each schedule that takes it, and is reported once, where it is.
func unique(diags diag.List) diag.List {
	seen := map[diag.Diagnostic]bool{}
	out := diags[:0]
	for _, d := range diags {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// capPerFile keeps the first model.MaxFileErrors problems of each file and
// says how many more there are: one broken file must not flood a log.
func capPerFile(diags diag.List) diag.List {
	out := diags[:0:0]
	for i := 0; i < len(diags); {
		j := i
		for j < len(diags) && diags[j].Pos.File == diags[i].Pos.File {
			j++
		}
		if n := j - i; n > model.MaxFileErrors+1 {
			out = append(out, diags[i:i+model.MaxFileErrors]...)
			out.Errorf(diag.Pos{File: diags[i].Pos.File}, "fix these first", "%d more problems in this file are not shown", n-model.MaxFileErrors)
		} else {
			out = append(out, diags[i:j]...)
		}
		i = j
	}
	return out
}

// loader is the state of one Load: what has been read so far, measured
// against the limits.
type loader struct {
	root   string
	cfg    *model.Config
	diags  diag.List
	bytes  int64 // YAML bytes read so far
	budget budget
}

func (l *loader) decoder(rel string) *decoder {
	return &decoder{file: rel, diags: &l.diags, budget: &l.budget}
}

// redactAll hides secrets in messages: they quote values from the files,
// and validate's output may be a public CI log.
func redactAll(diags diag.List, r *redact.Redactor) {
	for i := range diags {
		diags[i].Msg = r.String(diags[i].Msg)
		diags[i].Hint = r.String(diags[i].Hint)
	}
}

// yamlFiles lists *.yaml and *.yml under dir (slash paths relative to the
// repository's real root; a dir that is a symlink inside the repository is
// listed at its real place). A missing directory is not an error: a repo
// may have no schedules yet. Symlinked subdirectories are not followed.
func (l *loader) yamlFiles(dir string, recursive bool) (files []string, found bool, err error) {
	realRoot, realDir, err := repofs.Dir(l.root, dir)
	var refused *repofs.Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case errors.As(err, &refused):
		l.diags.Errorf(diag.Pos{File: dir}, readHint, "%v", err)
		return nil, true, nil
	case err != nil:
		return nil, false, err
	}
	base := filepath.Join(realRoot, realDir)
	err = filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != base && (!recursive || strings.HasPrefix(e.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			rel, _ := filepath.Rel(realRoot, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, true, err
}

const readHint = "commit the file itself; astra reads only regular files inside the repository"

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseFile returns the documents of one YAML file. Syntax errors and
// refused files become diagnostics; only I/O errors are returned.
func (l *loader) parseFile(rel string) ([]*yaml.Node, error) {
	pos := diag.Pos{File: rel}
	if l.bytes > model.MaxConfigBytes || l.budget.full {
		return nil, nil // reported once, where the limit was crossed
	}
	data, err := repofs.ReadFile(l.root, rel, model.MaxFileBytes)
	var refused *repofs.Error
	switch {
	case errors.Is(err, repofs.ErrTooLarge):
		l.diags.Errorf(pos, "split it into several files", "this file is larger than %d bytes (limit: bytes per YAML file); it was not read", model.MaxFileBytes)
		return nil, nil
	case errors.As(err, &refused):
		l.diags.Errorf(pos, readHint, "this file %v; it was not read", refused.Err)
		return nil, nil
	case err != nil:
		return nil, err
	}
	if l.bytes += int64(len(data)); l.bytes > model.MaxConfigBytes {
		l.diags.Errorf(pos, "keep schedules/ and policies/ smaller; the rest of the files were not read",
			"the YAML files add up to more than %d bytes (limit: bytes of configuration per repository)", model.MaxConfigBytes)
		return nil, nil
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
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
				pos.Line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			l.diags.Errorf(pos, "fix the YAML syntax", "%s", msg)
			return docs, nil
		}
		if len(n.Content) > 0 && !isNull(n.Content[0]) {
			docs = append(docs, n.Content[0])
		}
	}
}

// decodeSchedules accepts a single schedule per document, a `schedules:`
// list, or a document that is a bare list of schedules. Schedules beyond
// model.MaxSchedules are reported once and not decoded.
func (l *loader) decodeSchedules(rel string, doc *yaml.Node) {
	d := l.decoder(rel)
	add := func(n *yaml.Node, what string) {
		if len(l.cfg.Schedules) == model.MaxSchedules {
			d.errorf(n, fmt.Sprintf("the limit is %d schedules per repository", model.MaxSchedules),
				"more than %d schedules; this and later ones were not read", model.MaxSchedules)
		}
		if len(l.cfg.Schedules) >= model.MaxSchedules {
			return
		}
		s := &model.Schedule{}
		d.decode(n, reflect.ValueOf(s).Elem(), what)
		if s.Meta.Pos.File != "" { // else a limit cut decoding off, and said so
			l.cfg.Schedules = append(l.cfg.Schedules, s)
		}
	}
	list := doc
	if doc.Kind == yaml.MappingNode && len(doc.Content) >= 2 && doc.Content[0].Value == "schedules" {
		if len(doc.Content) > 2 {
			d.errorf(doc.Content[2], "put other keys inside each schedule", "a file with a schedules: list may hold nothing else")
		}
		list = doc.Content[1]
		if list.Kind != yaml.SequenceNode {
			d.errorf(list, "write `schedules:` followed by `- name: ...` items", "schedules must be a list")
			return
		}
	}
	switch list.Kind {
	case yaml.SequenceNode:
		for i, item := range list.Content {
			if item.Kind != yaml.MappingNode {
				d.errorf(item, "write each schedule as `key: value` lines", "schedule %d must be a mapping, not %s", i+1, kindName(item))
				continue
			}
			add(item, fmt.Sprintf("schedule %d", i+1))
		}
	case yaml.MappingNode:
		add(doc, "schedule")
	default:
		d.errorf(doc, "write a schedule as `key: value` lines, or a list of them", "a schedule must be a mapping, not %s", kindName(doc))
	}
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
	m.addTrust(rel, doc, p)
	m.addCalendars(p.Calendars, keyPos)
	m.addDefaults(p, keyPos)
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
