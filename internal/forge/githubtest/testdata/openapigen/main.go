// Command openapigen writes the part of GitHub's REST API description that
// the fake GitHub in package githubtest is checked against: the operations
// it serves (githubtest.Operations) with their parameters, request bodies
// and responses, and every component they reference, transitively. Example
// payloads are left out; nothing else is changed.
//
// The description is generated/api.github.com.json of the npm package
// @octokit/openapi, GitHub's published description. The go:generate line of
// package githubtest pins its version:
//
//	go generate ./internal/forge/githubtest
//
// runs this command, which fetches the package with `npm pack` into a
// temporary directory. With a tarball downloaded elsewhere, pass -spec:
//
//	npm pack @octokit/openapi@23.0.2
//	go run ./internal/forge/githubtest/testdata/openapigen -version 23.0.2 \
//		-spec octokit-openapi-23.0.2.tgz -out internal/forge/githubtest/testdata/openapi.json
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

const (
	pkg        = "@octokit/openapi"
	memberPath = "package/generated/api.github.com.json"
)

// extraSchemas are components no served operation references that the
// conformance test needs: GitHub documents the items of GET
// /repos/{owner}/{repo}/issues/{issue_number}/events without the
// closed/reopened/merged events, which it describes with this schema in
// the timeline.
var extraSchemas = []string{"state-change-issue-event"}

func main() {
	version := flag.String("version", "", "version of "+pkg+" to fetch with npm pack, and to expect in -spec")
	spec := flag.String("spec", "", "read the description from this .tgz (npm pack output) or .json file instead of npm")
	out := flag.String("out", "", "file to write the subset to")
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: openapigen -version V [-spec FILE] -out FILE")
		os.Exit(2)
	}
	if err := run(*version, *spec, *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(version, spec, out string) error {
	data, err := load(version, spec)
	if err != nil {
		return err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("parse the description: %v", err)
	}
	if v := lookup(doc, "info", "version"); v != version {
		return fmt.Errorf("the description is version %v, not %s", v, version)
	}
	sub, err := subset(doc, githubtest.Operations())
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(sub); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// load returns generated/api.github.com.json of the package.
func load(version, spec string) ([]byte, error) {
	if strings.HasSuffix(spec, ".json") {
		return os.ReadFile(spec)
	}
	if spec == "" {
		dir, err := os.MkdirTemp("", "openapigen")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", dir, pkg+"@"+version)
		cmd.Stderr = os.Stderr
		name, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("npm pack %s@%s: %v", pkg, version, err)
		}
		spec = filepath.Join(dir, strings.TrimSpace(string(name)))
	}
	f, err := os.Open(spec)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", spec, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no %s", spec, memberPath)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", spec, err)
		}
		if h.Name == memberPath {
			return io.ReadAll(tr)
		}
	}
}

func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// subset keeps ops ("METHOD /path") and the components they reference.
func subset(doc map[string]any, ops []string) (map[string]any, error) {
	paths := map[string]any{}
	for _, op := range ops {
		method, p, _ := strings.Cut(op, " ")
		method = strings.ToLower(method)
		o, ok := lookup(doc, "paths", p, method).(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the description has no operation %s", op)
		}
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			if params := lookup(doc, "paths", p, "parameters"); params != nil {
				item["parameters"] = params
			}
			paths[p] = item
		}
		item[method] = withoutExamples(o)
	}
	components := map[string]any{}
	var add func(v any) error
	add = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				kind, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
				if !ok || !strings.HasPrefix(ref, "#/components/") {
					return fmt.Errorf("unexpected $ref %q", ref)
				}
				if err := addComponent(doc, components, kind, name, add); err != nil {
					return err
				}
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := add(v[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range v {
				if err := add(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := add(paths); err != nil {
		return nil, err
	}
	for _, name := range extraSchemas {
		if err := addComponent(doc, components, "schemas", name, add); err != nil {
			return nil, err
		}
	}
	return map[string]any{
		"openapi":    doc["openapi"],
		"info":       doc["info"],
		"paths":      paths,
		"components": components,
	}, nil
}

func addComponent(doc, components map[string]any, kind, name string, add func(any) error) error {
	group, _ := components[kind].(map[string]any)
	if group == nil {
		group = map[string]any{}
		components[kind] = group
	}
	if _, done := group[name]; done {
		return nil
	}
	c := lookup(doc, "components", kind, name)
	if c == nil {
		return fmt.Errorf("the description has no component %s/%s", kind, name)
	}
	c = withoutExamples(c)
	group[name] = c
	return add(c)
}

// withoutExamples drops the example payloads of media types and
// parameters (their "examples", which point into components/examples);
// schemas are kept whole.
func withoutExamples(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if _, media := v["schema"]; media && k == "examples" {
				continue
			}
			out[k] = withoutExamples(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutExamples(x)
		}
		return out
	}
	return v
}
