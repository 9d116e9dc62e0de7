package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
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
