package config

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/inputschema"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

const inputSchemaHint = "write a JSON Schema inline, or the path of a .json file in the repository such as schemas/deploy.json"

// compileInputSchema compiles a tool's input_schema, inline or from its
// file, and sets t.Input.
func compileInputSchema(root string, t *model.Tool, diags *diag.List) {
	at := t.Meta.At("input_schema")
	var doc []byte
	switch v := t.InputSchema.(type) {
	case nil:
		return
	case string:
		rel := path.Clean(strings.TrimPrefix(v, "./"))
		if !strings.HasSuffix(rel, ".json") || path.IsAbs(rel) || strings.HasPrefix(rel, "../") {
			diags.Errorf(at, inputSchemaHint, "input_schema %q is not the path of a .json file in the repository", v)
			return
		}
		b, err := repofs.ReadFile(root, rel, model.MaxFileBytes)
		if err != nil {
			diags.Errorf(at, inputSchemaHint, "input_schema %q cannot be read: %v", v, err)
			return
		}
		doc = b
	case map[string]any, bool:
		doc, _ = json.Marshal(v) // JSON-compatible: the decoder made sure
	default:
		diags.Errorf(at, inputSchemaHint, "input_schema must be a schema or a path")
		return
	}
	s, err := inputschema.Compile(doc)
	if err != nil {
		diags.Errorf(at, inputSchemaHint, "tool %q input_schema: %v", t.Name, err)
		return
	}
	t.Input = s
}

// validatePayload checks a schedule's payload against its tool's
// input_schema. A schedule run only by events and written without a
// payload is left out: its tool's input is the event.
func validatePayload(s *model.Schedule, tool *model.Tool, diags *diag.List) {
	if tool == nil || tool.Input == nil || !model.ChecksPayload(s) {
		return
	}
	if err := tool.Input.Check(model.PayloadOf(s)); err != nil {
		diags.Errorf(s.Meta.At("payload"), "make the payload match the input_schema of tool "+tool.Name,
			"schedule %q payload does not match tool %q's input_schema: %v", s.Name, tool.Name, err)
	}
}
