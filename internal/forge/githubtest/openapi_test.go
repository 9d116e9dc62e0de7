package githubtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// This file checks the fake against GitHub's published REST API
// description: testdata/openapi.json is the part of it the fake serves
// (see the go:generate line in server.go), so the tests need no network.

const specURL = "https://astra.invalid/githubtest/openapi.json"

// descriptionGaps are the places where GitHub's description disagrees with
// what GitHub answers or accepts. Each is patched into the description
// before checking, so that the fake can answer as GitHub does: add appends
// an alternative to the array at ptr, set sets properties of the object at
// ptr. Beyond these and toJSONSchema's reading of OpenAPI, nothing is
// loosened.
var descriptionGaps = []struct {
	ptr, why string
	add      any
	set      map[string]any
}{
	{
		ptr: "/components/schemas/issue-event-for-issue/anyOf",
		why: "the list of an issue's events leaves out closed, reopened and merged events; " +
			"GitHub describes them with state-change-issue-event in the timeline",
		add: map[string]any{"$ref": "#/components/schemas/state-change-issue-event"},
	},
	{
		ptr: "/components/schemas/pull-request-simple/properties/labels/items/properties/description",
		why: "a label's description is null when it has none, as pull-request says (github/rest-api-description#1812)",
		set: map[string]any{"nullable": true},
	},
	{
		ptr: "/paths/~1repos~1{owner}~1{repo}~1issues~1{issue_number}~1labels/post/requestBody/content/application~1json/schema/oneOf",
		why: `the operation's own text says "you can also pass an array of labels directly", ` +
			"which is what go-github's AddLabelsToIssue sends; the schema lists only the object form",
		add: map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"}},
	},
}

// anyOperation are statuses GitHub answers for any operation, whether or
// not the description lists them: a bad token, a missing permission or an
// exhausted rate limit, a repository or resource the token cannot see,
// and server errors. Their body is GitHub's error document.
var anyOperation = map[int]bool{401: true, 403: true, 404: true, 429: true, 500: true, 502: true, 503: true, 504: true}

// apiSpec is the description as a compiled set of JSON Schemas.
type apiSpec struct {
	doc      map[string]any // with descriptionGaps applied, before conversion
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by JSON pointer
}

func loadSpec(t testing.TB) *apiSpec {
	t.Helper()
	f, err := os.Open("testdata/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("testdata/openapi.json: %v", err)
	}
	doc := raw.(map[string]any)
	for _, g := range descriptionGaps {
		if err := patchAt(doc, g.ptr, g.add, g.set); err != nil {
			t.Fatalf("description gap %s: %v (regenerated description changed? %s)", g.ptr, err, g.why)
		}
	}
	c := jsonschema.NewCompiler()
	// OpenAPI 3.0 schemas are close to draft 7: siblings of $ref are
	// ignored, and formats are asserted.
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource(specURL, toJSONSchema(deepCopy(doc))); err != nil {
		t.Fatalf("load the description: %v", err)
	}
	return &apiSpec{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// patchAt applies a descriptionGaps entry.
func patchAt(doc map[string]any, ptr string, add any, set map[string]any) error {
	toks := strings.Split(ptr, "/")[1:]
	var v any = doc
	for i, tok := range toks {
		m, ok := v.(map[string]any)
		if !ok || m[unescapePtr(tok)] == nil {
			return fmt.Errorf("no %q", unescapePtr(tok))
		}
		if add != nil && i == len(toks)-1 {
			alts, ok := m[unescapePtr(tok)].([]any)
			if !ok {
				return fmt.Errorf("%q is not an array", unescapePtr(tok))
			}
			m[unescapePtr(tok)] = append(alts, add)
			return nil
		}
		v = m[unescapePtr(tok)]
	}
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	for k, x := range set {
		m[k] = x
	}
	return nil
}

func escapePtr(s string) string   { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
func unescapePtr(s string) string { return strings.NewReplacer("~1", "/", "~0", "~").Replace(s) }

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

// toJSONSchema rewrites what OpenAPI 3.0 says differently from JSON Schema:
// "nullable: true" admits null. oneOf is read as anyOf: GitHub's
// description uses it for alternatives that overlap (error documents
// without required properties, nullable alternatives), so an answer GitHub
// sends can match more than one.
func toJSONSchema(v any) any {
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			v[i] = toJSONSchema(x)
		}
		return v
	case map[string]any:
		for k, x := range v {
			v[k] = toJSONSchema(x)
		}
		if alts, ok := v["oneOf"]; ok {
			delete(v, "oneOf")
			v["anyOf"] = alts
		}
		if v["nullable"] != true {
			return v
		}
		delete(v, "nullable")
		if enum, ok := v["enum"].([]any); ok {
			v["enum"] = append(enum, nil)
		}
		if t, ok := v["type"].(string); ok {
			v["type"] = []any{t, "null"}
			return v
		}
		return map[string]any{"anyOf": []any{v, map[string]any{"type": "null"}}}
	}
	return v
}

// schema compiles the schema at ptr (a JSON pointer into the description).
func (s *apiSpec) schema(ptr string) (*jsonschema.Schema, error) {
	if sch, ok := s.schemas[ptr]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(specURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	s.schemas[ptr] = sch
	return sch, nil
}

// validate checks a JSON document against the schema at ptr.
func (s *apiSpec) validate(ptr string, data []byte) error {
	sch, err := s.schema(ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %v: %.200q", err, data)
	}
	return brief(sch.Validate(v))
}

// brief drops the first line of a validation error, which only names the
// schema's URL; the lines after it say what is wrong where.
func brief(err error) error {
	if err == nil {
		return nil
	}
	if _, details, ok := strings.Cut(err.Error(), "\n"); ok {
		return errors.New(strings.TrimSpace(details))
	}
	return err
}

// lookup follows a JSON pointer into the description.
func (s *apiSpec) lookup(ptr string) map[string]any {
	var v any = s.doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		switch x := v.(type) {
		case map[string]any:
			v = x[unescapePtr(tok)]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	m, _ := v.(map[string]any)
	return m
}

// deref returns the object at ptr, following a $ref to a component, and
// the pointer it was found at.
func (s *apiSpec) deref(ptr string) (map[string]any, string) {
	m := s.lookup(ptr)
	if ref, ok := m["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
		m = s.lookup(ptr)
	}
	return m, ptr
}

// opPtr is the JSON pointer of an operation ("GET /repos/{owner}/{repo}").
func opPtr(op string) string {
	method, tmpl, _ := strings.Cut(op, " ")
	return "/paths/" + escapePtr(tmpl) + "/" + strings.ToLower(method)
}

// exchange is one request and its answer, as seen on the wire.
type exchange struct {
	method, path, query string
	reqBody             []byte
	invalid             bool // the test sent a body the description rejects, on purpose
	status              int
	header              http.Header
	body                []byte
}

// wireLog is a RoundTripper recording every exchange.
type wireLog struct {
	mu      sync.Mutex
	log     []exchange
	invalid bool
}

// sendInvalid marks the requests f makes as invalid on purpose.
func (w *wireLog) sendInvalid(f func()) {
	w.mu.Lock()
	w.invalid = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.invalid = false
		w.mu.Unlock()
	}()
	f()
}

func (w *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	ex := exchange{method: req.Method, path: req.URL.EscapedPath(), query: req.URL.RawQuery, invalid: w.invalid}
	w.mu.Unlock()
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.reqBody = body
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	ex.status, ex.header, ex.body = resp.StatusCode, resp.Header.Clone(), body
	w.mu.Lock()
	w.log = append(w.log, ex)
	w.mu.Unlock()
	return resp, nil
}

func (w *wireLog) exchanges() []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange(nil), w.log...)
}

// findings collects what an exchange does wrong.
type findings []string

func (f *findings) add(format string, args ...any) { *f = append(*f, fmt.Sprintf(format, args...)) }

// check returns what in ex disagrees with the description: the request's
// parameters and body, the status, the body and headers of the answer.
func (s *apiSpec) check(ex exchange) (op string, problems []string) {
	i, pathParams := matchRoute(ex.method, ex.path)
	if i < 0 {
		return "", []string{"no route serves this request"}
	}
	op = routes[i].op
	ptr := opPtr(op)
	if s.lookup(ptr) == nil {
		return op, []string{"the description has no such operation (regenerate testdata/openapi.json)"}
	}
	var f findings
	s.checkParams(ptr, ex, pathParams, &f)
	s.checkRequestBody(ptr, ex, &f)
	s.checkResponse(ptr, ex, &f)
	return op, f
}

// checkParams checks the path and query parameters against the operation's.
func (s *apiSpec) checkParams(ptr string, ex exchange, pathParams map[string]string, f *findings) {
	query, err := url.ParseQuery(ex.query)
	if err != nil {
		f.add("query %q: %v", ex.query, err)
	}
	documented := map[string]bool{}
	params, _ := s.lookup(ptr)["parameters"].([]any)
	for j := range params {
		p, pp := s.deref(fmt.Sprintf("%s/parameters/%d", ptr, j))
		name, in := p["name"].(string), p["in"].(string)
		var values []string
		switch in {
		case "path":
			values = []string{pathParams[name]}
		case "query":
			documented[name] = true
			values = query[name]
			if len(values) == 0 && p["required"] == true {
				f.add("query parameter %s is required", name)
			}
		}
		for _, v := range values {
			if err := s.checkParam(pp+"/schema", v); err != nil {
				f.add("%s parameter %s=%q: %v", in, name, v, err)
			}
		}
	}
	for name := range query {
		if !documented[name] {
			f.add("query parameter %s is not documented", name)
		}
	}
}

func (s *apiSpec) checkRequestBody(ptr string, ex exchange, f *findings) {
	rb, rbPtr := s.deref(ptr + "/requestBody")
	switch {
	case rb == nil && len(ex.reqBody) > 0:
		f.add("the operation takes no request body, got %.200q", ex.reqBody)
	case rb != nil && len(ex.reqBody) == 0:
		if rb["required"] == true {
			f.add("the request body is required")
		}
	case rb != nil:
		err := s.validate(rbPtr+"/content/application~1json/schema", ex.reqBody)
		switch {
		case err != nil && !ex.invalid:
			f.add("request body: %v", err)
		case err == nil && ex.invalid:
			f.add("the description accepts the request body sent as invalid: %.200q", ex.reqBody)
		}
	}
}

// checkResponse checks the status, the body and the headers of the answer.
func (s *apiSpec) checkResponse(ptr string, ex exchange, f *findings) {
	resp, respPtr := s.deref(ptr + "/responses/" + strconv.Itoa(ex.status))
	if resp == nil {
		if !anyOperation[ex.status] {
			f.add("status %d is not documented for the operation", ex.status)
		}
		if err := s.checkErrorBody(ex); err != nil {
			f.add("%v", err)
		}
		return
	}
	content, _ := resp["content"].(map[string]any)
	switch {
	case content["application/json"] != nil:
		if mt, _, _ := mime.ParseMediaType(ex.header.Get("Content-Type")); mt != "application/json" {
			f.add("Content-Type %q, want application/json", ex.header.Get("Content-Type"))
		}
		if err := s.validate(respPtr+"/content/application~1json/schema", ex.body); err != nil {
			f.add("response body: %v", err)
		}
	case ex.status == http.StatusNoContent || ex.status == http.StatusNotModified:
		if len(ex.body) > 0 {
			f.add("status %d with a body: %.200q", ex.status, ex.body)
		}
	default:
		// An error answer the description gives no body for: GitHub
		// still sends its error document.
		if err := s.checkErrorBody(ex); err != nil {
			f.add("%v", err)
		}
	}
	s.checkHeaders(resp, respPtr, ex, f)
}

func (s *apiSpec) checkHeaders(resp map[string]any, respPtr string, ex exchange, f *findings) {
	headers, _ := resp["headers"].(map[string]any)
	for name := range headers {
		h, hp := s.deref(respPtr + "/headers/" + escapePtr(name))
		v := ex.header.Get(name)
		switch {
		case v == "" && name == "Link":
			// Sent only when there is more than one page.
		case v == "":
			f.add("header %s is missing", name)
		case h["schema"] != nil:
			if err := s.checkParam(hp+"/schema", v); err != nil {
				f.add("header %s=%q: %v", name, v, err)
			}
		}
	}
	if ex.header.Get("Link") != "" && headers["Link"] == nil {
		f.add("a Link header, which the operation does not document")
	}
}

func (s *apiSpec) checkErrorBody(ex exchange) error {
	if len(ex.body) == 0 {
		return nil
	}
	if err := s.validate("/components/schemas/basic-error", ex.body); err != nil {
		return fmt.Errorf("error body: %v", err)
	}
	return nil
}

// checkParam validates a parameter or header value: it is JSON when the
// schema wants a number or boolean, else a string.
func (s *apiSpec) checkParam(ptr, value string) error {
	var v any = value
	switch s.lookup(ptr)["type"] {
	case "integer", "number", "boolean":
		if x, err := jsonschema.UnmarshalJSON(strings.NewReader(value)); err == nil {
			v = x
		}
	}
	sch, err := s.schema(ptr)
	if err != nil {
		return err
	}
	return brief(sch.Validate(v))
}

// TestOpenAPISubsetMatchesRoutes fails when a route is added or removed
// without regenerating testdata/openapi.json.
func TestOpenAPISubsetMatchesRoutes(t *testing.T) {
	spec := loadSpec(t)
	served := map[string]bool{}
	for _, op := range Operations() {
		served[op] = true
		if spec.lookup(opPtr(op)) == nil {
			t.Errorf("%s is served but not in testdata/openapi.json: run go generate ./internal/forge/githubtest", op)
		}
	}
	paths, _ := spec.doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		for method := range item.(map[string]any) {
			if op := strings.ToUpper(method) + " " + tmpl; method != "parameters" && !served[op] {
				t.Errorf("testdata/openapi.json has %s, which the fake does not serve: run go generate ./internal/forge/githubtest", op)
			}
		}
	}
	info, _ := spec.doc["info"].(map[string]any)
	t.Logf("GitHub REST API description from @octokit/openapi %v, %d operations", info["version"], len(Operations()))
}

// TestOpenAPIMatchRoute pins how request paths map to operations.
func TestOpenAPIMatchRoute(t *testing.T) {
	for _, c := range []struct{ method, path, op, params string }{
		{"GET", "/repos/o/r", "GET /repos/{owner}/{repo}", "owner=o repo=r"},
		{"GET", "/repos/o/r/git/ref/heads/astra/approve/x", "GET /repos/{owner}/{repo}/git/ref/{ref}", "owner=o ref=heads/astra/approve/x repo=r"},
		{"GET", "/repos/o/r/contents/", "GET /repos/{owner}/{repo}/contents/{path}", "owner=o path= repo=r"},
		{"PUT", "/repos/o/r/contents/a/b.txt", "PUT /repos/{owner}/{repo}/contents/{path}", "owner=o path=a/b.txt repo=r"},
		{"PUT", "/repos/o/r/pulls/7/merge", "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", "owner=o pull_number=7 repo=r"},
		{"GET", "/orgs/o/teams/t/memberships/u", "GET /orgs/{org}/teams/{team_slug}/memberships/{username}", "org=o team_slug=t username=u"},
		{"GET", "/repos/o/r/rules/branches/astra/state", "GET /repos/{owner}/{repo}/rules/branches/{branch}", "branch=astra/state owner=o repo=r"},
		{"GET", "/repos/o/r/branches/astra%2Fstate/protection", "GET /repos/{owner}/{repo}/branches/{branch}/protection", "branch=astra/state owner=o repo=r"},
		{"GET", "/repos/o/r/rules/branches/", "", ""},
		{"GET", "/repos/o/r/git/refs/heads/main", "", ""},
		{"DELETE", "/repos/o/r", "", ""},
		{"GET", "/repos/o/r/pulls/7/merge/x", "", ""},
	} {
		i, p := matchRoute(c.method, c.path)
		op, params := "", ""
		if i >= 0 {
			op = routes[i].op
			var kv []string
			for k, v := range p {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			params = strings.Join(kv, " ")
		}
		if op != c.op || params != c.params {
			t.Errorf("%s %s = %q {%s}, want %q {%s}", c.method, c.path, op, params, c.op, c.params)
		}
	}
}

// TestOpenAPISchemaConversion checks the OpenAPI-to-JSON-Schema rules on
// small cases.
func TestOpenAPISchemaConversion(t *testing.T) {
	spec := loadSpec(t)
	for _, c := range []struct {
		ptr, doc string
		ok       bool
	}{
		{"/components/schemas/label", `{"id":1,"node_id":"L","url":"https://x/l","name":"n","description":null,"color":"ededed","default":false}`, true},
		{"/components/schemas/label", `{"id":1,"node_id":"L","url":"https://x/l","name":"n","color":"ededed","default":false}`, false},
		{"/components/schemas/label", `{"id":"1","node_id":"L","url":"https://x/l","name":"n","description":null,"color":"ededed","default":false}`, false},
		{"/components/schemas/git-ref", `{"ref":"refs/heads/x","node_id":"R","url":"not a uri","object":{"type":"commit","sha":"a","url":"https://x/c"}}`, false},
		{"/components/schemas/team-membership", `{"url":"https://x/m","role":"member","state":"active","extra":1}`, true},
		{"/components/schemas/team-membership", `{"url":"https://x/m","role":"member","state":"gone"}`, false},
		{"/components/schemas/nullable-simple-user", `null`, true},
		{"/components/schemas/simple-user", `null`, false},
		// oneOf(basic-error, repository-rule-violation-error): both match.
		{"/paths/~1repos~1{owner}~1{repo}~1contents~1{path}/put/responses/409/content/application~1json/schema", `{"message":"m","documentation_url":"d"}`, true},
	} {
		err := spec.validate(c.ptr, []byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v, want ok=%v", c.ptr, c.doc, err, c.ok)
		}
	}
}
