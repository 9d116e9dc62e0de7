package config

import (
	"maps"
	"reflect"
	"sort"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// addDefaults merges one file's defaults: and templates:, refusing a
// second defaults: section and a template name already defined.
func (m *merger) addDefaults(p *model.Policies, at func(section, name string) diag.Pos) {
	if p.Defaults.Meta.Pos.File != "" {
		if prev := m.p.Defaults.Meta.Pos; prev.File != "" {
			m.diags.Errorf(p.Defaults.Meta.Pos, "keep one defaults: section", "the defaults are already defined at %s", prev)
		} else {
			m.p.Defaults = p.Defaults
		}
	}
	names := make([]string, 0, len(p.Templates))
	for name := range p.Templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pos, k := at("templates", name), "templates."+name
		if prev, ok := m.p.Meta.Keys[k]; ok {
			m.diags.Errorf(pos, "define each template once", "template %q is already defined at %s", name, prev)
			continue
		}
		t := p.Templates[name]
		if t == nil {
			t = &model.Template{}
		}
		if t.Meta.Pos.File == "" {
			t.Meta.Pos = pos
		}
		for _, key := range []string{"extends", "id", "name"} {
			if t.Meta.Has(key) {
				m.diags.Errorf(t.Meta.At(key), "write it in each schedule instead", "template %q may not set %s", name, key)
				delete(t.Meta.Keys, key)
			}
		}
		if m.p.Templates == nil {
			m.p.Templates = map[string]*model.Template{}
		}
		m.p.Meta.Keys[k] = pos
		m.p.Templates[name] = t
	}
}

// applyTemplates gives each schedule the keys it leaves out: its
// template's first, then the policies defaults. A key taken keeps the
// position it was written at, so a problem in it is reported there.
func applyTemplates(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	for _, s := range cfg.Schedules {
		if s.Extends != "" {
			t, ok := p.Templates[s.Extends]
			if !ok {
				diags.Errorf(s.Meta.At("extends"), suggest(s.Extends, sortedKeys(p.Templates), "templates"),
					"unknown template %q", s.Extends)
			} else {
				fill(reflect.ValueOf(s).Elem(), reflect.ValueOf(t).Elem())
			}
		}
		fill(reflect.ValueOf(s).Elem(), reflect.ValueOf(&p.Defaults).Elem())
	}
}

// fill copies into dst, a struct with a Meta, each key src wrote and dst
// did not, matched by YAML name; a nested mapping both wrote is filled
// key by key. Nested mappings are never shared, so filling one schedule
// cannot change a template.
func fill(dst, src reflect.Value) {
	dm, sm := metaOf(dst), metaOf(src)
	if dm.Keys == nil {
		dm.Keys = map[string]diag.Pos{}
	}
	if dm.Pos.File == "" {
		dm.Pos = sm.Pos
	}
	fields := map[string]int{}
	for i := range dst.NumField() {
		if name := yamlName(dst.Type().Field(i)); name != "" {
			fields[name] = i
		}
	}
	for j := range src.NumField() {
		key := yamlName(src.Type().Field(j))
		i, ok := fields[key]
		if !ok || !sm.Has(key) {
			continue
		}
		df, sf := dst.Field(i), src.Field(j)
		switch {
		case !dm.Has(key):
			df.Set(clone(sf))
			dm.Keys[key] = sm.Keys[key]
		case mergeable(sf.Type()):
			fill(df, sf)
		case sf.Kind() == reflect.Pointer && mergeable(sf.Type().Elem()) && !sf.IsNil() && !df.IsNil():
			fill(df.Elem(), sf.Elem())
		}
	}
}

// clone copies a value so that filling it later (its Meta.Keys) leaves
// the original alone.
func clone(v reflect.Value) reflect.Value {
	switch {
	case hasMeta(v.Type()):
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		metaOf(c).Keys = maps.Clone(metaOf(v).Keys)
		return c
	case v.Kind() == reflect.Pointer && !v.IsNil() && hasMeta(v.Type().Elem()):
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(clone(v.Elem()))
		return c
	}
	return v
}

// mergeable reports whether a nested mapping is filled key by key: one
// with a Meta that has no short form (result_route: notify).
func mergeable(t reflect.Type) bool {
	return hasMeta(t) && !reflect.PointerTo(t).Implements(unmarshalerType)
}

func hasMeta(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t.NumField() > 0 && t.Field(0).Type == metaType
}

func metaOf(v reflect.Value) *model.Meta {
	return v.Field(0).Addr().Interface().(*model.Meta)
}
