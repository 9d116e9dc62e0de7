package ledger

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSchemaDescribesEveryEvent: schema/ledger-event.schema.json names
// every event kind this package declares and every field an Event writes,
// so a kind or field added here without the schema fails now, not when a
// script first writes one.
func TestSchemaDescribesEveryEvent(t *testing.T) {
	raw, err := os.ReadFile("../../schema/ledger-event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &sch); err != nil {
		t.Fatal(err)
	}
	kinds := declaredKinds(t)
	described := sch.Properties["event"].Enum
	for _, k := range kinds {
		if !slices.Contains(described, k) || sch.Defs[k] == nil {
			t.Errorf("kind %s is not in the schema's event enum and $defs", k)
		}
	}
	for _, k := range described {
		if !slices.Contains(kinds, k) {
			t.Errorf("the schema names kind %s, which the ledger does not declare", k)
		}
	}
	for i := range reflect.TypeFor[Event]().NumField() {
		f := reflect.TypeFor[Event]().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if _, ok := sch.Properties[name]; !ok {
			t.Errorf("field %s (%s) is not in the schema's properties", name, f.Name)
		}
	}
}

// declaredKinds are the values of the Kind constants of event.go.
func declaredKinds(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
			return true
		}
		for _, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				out = append(out, s)
			}
		}
		return true
	})
	if len(out) < 40 {
		t.Fatalf("found %d kinds in event.go", len(out))
	}
	return out
}
