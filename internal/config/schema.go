package config

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
)

// Schema files are generated from the model types so that editors (through
// yaml-language-server) complete and check the same keys the loader accepts.
// TestSchemaFiles keeps the committed copies under schema/ in step.

// scheduleSchema is the JSON Schema of a schedules/**/*.yaml document.
func scheduleSchema() []byte {
	g := newSchemaGen()
	s := g.of(reflect.TypeFor[model.Schedule]())
	return g.doc("astra schedule", "One schedule per document, a list of them, or a `schedules:` list.", map[string]any{
		"oneOf": []any{
			s,
			map[string]any{"type": "array", "items": s},
			map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"schedules": map[string]any{"type": "array", "items": s}},
				"required":             []string{"schedules"},
				"additionalProperties": false,
			},
		},
	})
}

// policiesSchema is the JSON Schema of a policies/*.yaml document.
func policiesSchema() []byte {
	g := newSchemaGen()
	return g.doc("astra policies", "Tools, task policies, actors, the global budget, roles, permissions, identities and issuers; sections may be split across files.",
		g.of(reflect.TypeFor[model.Policies]()))
}

type schemaGen struct{ defs map[string]any }

func newSchemaGen() *schemaGen { return &schemaGen{defs: map[string]any{}} }

func (g *schemaGen) doc(title, desc string, root map[string]any) []byte {
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["title"] = title
	root["description"] = desc
	if len(g.defs) > 0 {
		root["definitions"] = g.defs
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic(err) // only maps, strings and slices above
	}
	return append(b, '\n')
}

var durationSchema = map[string]any{
	"type":        "string",
	"pattern":     `^([0-9]+d|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`,
	"description": "A duration such as 30s, 5m, 1h30m or 2d.",
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch t {
	case reflect.TypeFor[model.Duration]():
		return durationSchema
	case reflect.TypeFor[model.Tier]():
		return map[string]any{"enum": []any{0, 1, 2, "read_only", "local_write", "external"}}
	case reflect.TypeFor[model.Autonomy]():
		return map[string]any{"enum": []any{"L0", "L1", "L2", "L3", "L0_Ask", "L1_Draft", "L2_ExecuteNotify", "L3_ExecuteSilent", "ask", "draft", "execute_notify", "execute_silent"}}
	case reflect.TypeFor[money.USD]():
		return map[string]any{"type": "number", "minimum": 0, "multipleOf": 0.000001, "description": "US dollars, at most 6 decimals."}
	case reflect.TypeFor[model.Risk]():
		return map[string]any{"enum": []any{"low", "medium", "high"}}
	case reflect.TypeFor[model.Labels]():
		label := map[string]any{"type": "string", "pattern": model.LabelPattern}
		return map[string]any{"oneOf": []any{label, map[string]any{"type": "array", "items": label, "minItems": 1, "maxItems": model.MaxRunnerLabels}}}
	case reflect.TypeFor[model.Calendar]():
		entry := map[string]any{"type": "string", "description": "A date (2026-12-25) or an iCalendar file in the repository (.ics)."}
		return map[string]any{"oneOf": []any{entry, map[string]any{"type": "array", "items": entry, "maxItems": model.MaxCalendarEntries}}}
	case reflect.TypeFor[model.Template]():
		return g.template(t)
	case reflect.TypeFor[model.ResultRoute]():
		return map[string]any{"oneOf": []any{
			map[string]any{"enum": []any{model.RouteSilent, model.RouteNotify, model.RouteMemoryUpdate, model.RouteChainNext}},
			g.ref(t),
		}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Struct:
		return g.ref(t)
	case reflect.Interface: // input_schema: a path or an inline schema
		return map[string]any{"type": []any{"string", "object"}}
	}
	panic("schema: unsupported type " + t.String())
}

// ref puts a struct's schema under definitions and refers to it.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	name := t.Name()
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = nil // break recursion
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			key := yamlName(f)
			if key == "" {
				continue
			}
			p := map[string]any{}
			for k, v := range g.of(f.Type) {
				p[k] = v
			}
			if doc := f.Tag.Get("doc"); doc != "" {
				p["description"] = doc
			}
			if enum := f.Tag.Get("enum"); enum != "" {
				p["enum"] = strings.Split(enum, ",")
			}
			for _, bound := range []string{"minimum", "maximum"} {
				if v := f.Tag.Get(bound); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil {
						panic("schema: " + t.Name() + "." + f.Name + ": " + bound + " " + v)
					}
					p[bound] = n
				}
			}
			props[key] = p
			if f.Tag.Get("required") == "true" {
				required = append(required, key)
			}
		}
		def := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			def["required"] = required
		}
		g.defs[name] = def
	}
	return map[string]any{"$ref": "#/definitions/" + name}
}

// template is a schedule's schema with nothing required and without the
// keys a template may not set.
func (g *schemaGen) template(t reflect.Type) map[string]any {
	ref := g.ref(t)
	def := g.defs[t.Name()].(map[string]any)
	delete(def, "required")
	props := def["properties"].(map[string]any)
	for _, k := range []string{"extends", "id", "name"} {
		delete(props, k)
	}
	return ref
}
