// Package inputschema checks tools' inputs against the JSON Schema a tool
// declares (input_schema): schedule payloads when the configuration is
// validated, and what a run hands its tool before it runs.
package inputschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is one compiled input schema.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles doc, a JSON Schema as JSON (draft 2020-12 unless its
// $schema names another). A schema refers to nothing outside itself: $ref to another document is
// refused, so checking a payload never reads a file or the network.
func Compile(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no files, no network
	const url = "astra:///input_schema.json"
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", oneLine(err.Error()))
	}
	return &Schema{s}, nil
}

// Check reports how doc, any JSON-compatible value, does not match the
// schema; nil when it does.
func (s *Schema) Check(doc any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return s.CheckJSON(b)
}

// CheckJSON is Check of a JSON document.
func (s *Schema) CheckJSON(doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			sortCauses(ve)
		}
		return fmt.Errorf("%s", oneLine(err.Error()))
	}
	return nil
}

// sortCauses orders the report by where in the document each problem is:
// the library walks an object's properties in map order, so without it the
// same payload would be reported differently from run to run.
func sortCauses(e *jsonschema.ValidationError) {
	for _, c := range e.Causes {
		sortCauses(c)
	}
	sort.SliceStable(e.Causes, func(i, j int) bool {
		a, b := e.Causes[i], e.Causes[j]
		if pa, pb := strings.Join(a.InstanceLocation, "/"), strings.Join(b.InstanceLocation, "/"); pa != pb {
			return pa < pb
		}
		return a.Error() < b.Error()
	})
}

// oneLine folds the library's indented report into one line: the first
// line names the schema's internal URL, which says nothing to a user.
func oneLine(msg string) string {
	lines := strings.Split(msg, "\n")
	if len(lines) > 1 && strings.HasPrefix(lines[0], "jsonschema") {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
	}
	return strings.Join(lines, "; ")
}
