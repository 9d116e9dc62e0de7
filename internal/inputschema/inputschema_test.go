package inputschema

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","required":["env"],"properties":{"env":{"enum":["prod","staging"]},"n":{"type":"integer"}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  any
		want string // "" matches
	}{
		{map[string]any{"env": "prod", "n": 2}, ""},
		{map[string]any{}, "at '': missing property 'env'"},
		{map[string]any{"env": "dev", "n": 1.5, "x": 1}, "at '': additional properties 'x' not allowed; at '/env': value must be one of 'prod', 'staging'; at '/n': got number, want integer"},
	} {
		err := s.Check(c.doc)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("Check(%v) = %q, want %q", c.doc, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("Check(%v) = nil, want %q", c.doc, c.want)
		}
	}
	if err := s.CheckJSON([]byte(`{"env":`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("CheckJSON of broken JSON = %v", err)
	}
}

func TestCompileRefuses(t *testing.T) {
	for doc, want := range map[string]string{
		`{"type":"objec"}`:                      "not a valid JSON Schema",
		`{"$ref":"file:///etc/passwd"}`:         `no URLLoader registered for "file:///etc/passwd"`,
		`{"$ref":"https://example.com/s.json"}`: "no URLLoader registered",
		`{`:                                     "not JSON",
	} {
		if _, err := Compile([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%s) = %v, want %q", doc, err, want)
		}
	}
}
