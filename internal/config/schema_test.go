package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

var update = flag.Bool("update", false, "rewrite schema/*.json from the model types")

var schemaFiles = map[string]func() []byte{
	"schedule.schema.json": scheduleSchema,
	"policies.schema.json": policiesSchema,
}

// TestSchemaFiles keeps the committed schema files generated from the types.
func TestSchemaFiles(t *testing.T) {
	for name, gen := range schemaFiles {
		path := filepath.Join("../../schema", name)
		want := gen()
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with the model types: run `make schema`", path)
		}
	}
}

func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaFiles[name]()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlDocs decodes each document of a YAML file into JSON-like values.
func yamlDocs(t *testing.T, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			return out
		}
		if v != nil {
			out = append(out, v)
		}
	}
}

// TestSchemaAgreesWithLoader: what the loader accepts, the schema accepts
// (the bundled examples), and key and type mistakes the loader refuses, the
// schema refuses too.
func TestSchemaAgreesWithLoader(t *testing.T) {
	sched, pol := compile(t, "schedule.schema.json"), compile(t, "policies.schema.json")
	for _, pattern := range []string{"../../schedules/*/*.yaml", "../../policies/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		if len(files) == 0 {
			t.Fatalf("no files for %s", pattern)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s := sched
			if strings.Contains(f, "policies") {
				s = pol
			}
			for _, doc := range yamlDocs(t, data) {
				if err := s.Validate(doc); err != nil {
					t.Errorf("%s: schema refuses a valid file: %v", f, err)
				}
			}
		}
	}
	for _, name := range []string{"unknown_key", "wrong_type"} {
		a, err := txtar.ParseFile("../../testdata/invalid/" + name + ".txtar")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if !strings.HasPrefix(f.Name, "schedules/") {
				continue
			}
			for _, doc := range yamlDocs(t, f.Data) {
				if sched.Validate(doc) == nil {
					t.Errorf("%s: schema accepts what the loader refuses", name)
				}
			}
		}
	}
}

// TestSchemaBounds: the schema's numeric bounds are the loader's, so an
// editor flags what validate would refuse.
func TestSchemaBounds(t *testing.T) {
	sched := compile(t, "schedule.schema.json")
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{fmt.Sprintf(`{"name": "a", "cron": "@daily", "target_tool": "t", "catchup": {"max": %d}}`, model.MaxCatchupMax), true},
		{fmt.Sprintf(`{"name": "a", "cron": "@daily", "target_tool": "t", "catchup": {"max": %d}}`, model.MaxCatchupMax+1), false},
		{`{"name": "a", "cron": "@daily", "target_tool": "t", "catchup": {"max": 0}}`, false},
		{`{"name": "a", "cron": "@daily", "target_tool": "t", "priority": 10}`, false},
		{`{"name": "a", "cron": "@daily", "target_tool": "t", "retry": {"max_attempts": 0}}`, false},
		{`{"name": "a", "cron": "@daily", "target_tool": "t", "budget": {"max_tokens": -1}}`, false},
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(doc); (err == nil) != c.ok {
			t.Errorf("%s: schema says %v, want ok=%v", c.doc, err, c.ok)
		}
		loaded := filepath.Join(t.TempDir(), "schedules")
		os.MkdirAll(loaded, 0o755)
		os.WriteFile(filepath.Join(loaded, "a.yaml"), []byte(c.doc+"\n"), 0o644)
		_, diags, _ := Load(filepath.Dir(loaded))
		refused := false
		for _, d := range diags {
			refused = refused || d.Severity == diag.Error && !strings.Contains(d.Msg, "tool") && !strings.Contains(d.Msg, "polic")
		}
		if refused == c.ok {
			t.Errorf("%s: the loader says %v, the schema ok=%v", c.doc, diags, c.ok)
		}
	}
}
