package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// decoder maps yaml.Nodes onto Go values strictly: unknown keys, duplicate
// keys and wrong types are all reported, with positions, and decoding goes
// on so that one run reports every problem. yaml.v3's own KnownFields mode
// stops at the first document error and gives no columns.
type decoder struct {
	file   string
	diags  *diag.List
	budget *budget
}

// budget bounds the work of one Load: model.MaxYAMLValues values decoded
// in all (an alias counts each time it is used, so aliases cannot multiply
// the work), and model.MaxFileErrors problems reported per file.
type budget struct {
	values int
	file   string // the file errors are being counted for
	errors int
	full   bool // MaxYAMLValues was reached: decode nothing more
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	metaType        = reflect.TypeFor[model.Meta]()
)

func (d *decoder) pos(n *yaml.Node) diag.Pos {
	return diag.Pos{File: d.file, Line: n.Line, Col: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, hint, format string, args ...any) {
	b := d.budget
	if b.file != d.file {
		b.file, b.errors = d.file, 0
	}
	switch b.errors++; {
	case b.errors <= model.MaxFileErrors:
		d.diags.Errorf(d.pos(n), hint, format, args...)
	case b.errors == model.MaxFileErrors+1:
		d.diags.Errorf(d.pos(n), "fix these first", "more than %d problems in this file; the rest of it was not checked", model.MaxFileErrors)
	}
}

// spend counts one value against the budget; false means stop decoding.
func (d *decoder) spend(n *yaml.Node) bool {
	b := d.budget
	if b.full || b.file == d.file && b.errors > model.MaxFileErrors {
		return false
	}
	if b.values++; b.values > model.MaxYAMLValues {
		b.full = true
		d.diags.Errorf(d.pos(n), "use fewer values or aliases; the rest was not read",
			"more than %d YAML values in schedules/ and policies/ (limit: values per configuration, each use of an alias counted)", model.MaxYAMLValues)
		return false
	}
	return true
}

// fits reports whether a list or mapping is within model.MaxListItems.
func (d *decoder) fits(n *yaml.Node, what string) bool {
	items := len(n.Content)
	if n.Kind == yaml.MappingNode {
		items /= 2
	}
	if items > model.MaxListItems {
		d.errorf(n, "split the configuration differently", "%s has %d items, more than the limit of %d items per list or mapping", what, items, model.MaxListItems)
		return false
	}
	return true
}

// weigh spends the budget on every value under n, aliases followed, before
// yaml.v3 decodes n whole (payloads).
func (d *decoder) weigh(n *yaml.Node) bool {
	if !d.spend(n) {
		return false
	}
	if n.Kind == yaml.AliasNode {
		return d.weigh(n.Alias)
	}
	for _, c := range n.Content {
		if !d.weigh(c) {
			return false
		}
	}
	return true
}

// decode fills v (which must be settable) from n. what names the value in
// messages, e.g. `key "retry"`.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, what string) {
	if !d.spend(n) {
		return
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), what)
		return
	}
	if d.unmarshal(n, v, what) {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, what)
	case reflect.Map:
		d.decodeMap(n, v, what)
	case reflect.Slice:
		d.decodeSlice(n, v, what)
	case reflect.Interface:
		d.decodeAny(n, v, what)
	default:
		d.decodeScalar(n, v, what)
	}
}

// unmarshal lets a type that decodes itself (a yaml.Unmarshaler) decode
// n, a struct only from a scalar (its short form), and reports whether it
// did.
func (d *decoder) unmarshal(n *yaml.Node, v reflect.Value, what string) bool {
	if !v.CanAddr() || !v.Addr().Type().Implements(unmarshalerType) || (v.Kind() == reflect.Struct && n.Kind != yaml.ScalarNode) {
		return false
	}
	if isNull(n) {
		return true
	}
	if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
		d.errorf(n, "", "%s: %v", what, err)
	}
	return true
}

// decodeAny decodes a payload: any YAML that is also JSON.
func (d *decoder) decodeAny(n *yaml.Node, v reflect.Value, what string) {
	if !d.weigh(n) {
		return
	}
	var x any
	if err := n.Decode(&x); err != nil {
		d.errorf(n, "", "%s: %v", what, err)
		return
	}
	x, err := jsonCompatible(x)
	if err != nil {
		d.errorf(n, "payloads must be JSON-compatible", "%s: %v", what, err)
		return
	}
	if x != nil {
		v.Set(reflect.ValueOf(x))
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.MappingNode {
		if !isNull(n) {
			d.errorf(n, "write it as `key: value` lines", "%s must be a mapping, not %s", what, kindName(n))
		}
		return
	}
	t := v.Type()
	fields := map[string]int{}
	metaIdx := -1
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == metaType {
			metaIdx = i
			continue
		}
		if name := yamlName(f); name != "" {
			fields[name] = i
		}
	}
	meta := model.Meta{Pos: d.pos(n), Keys: map[string]diag.Pos{}}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && d.spend(n.Content[i]); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := k.Value
		if seen[key] {
			d.errorf(k, "remove one of them", "key %q appears twice in %s", key, what)
			continue
		}
		seen[key] = true
		idx, ok := fields[key]
		if !ok {
			d.errorf(k, suggest(key, keysOf(fields), "keys"), "unknown key %q in %s", key, what)
			continue
		}
		p := d.pos(val)
		if val.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			p.Col++ // point at the content, so offsets inside the value add up
		}
		before := len(*d.diags)
		d.decode(val, v.Field(idx), fmt.Sprintf("key %q", key))
		if len(*d.diags) == before {
			// A value that did not decode counts as unset, so later checks
			// do not report it again.
			meta.Keys[key] = p
		}
	}
	if metaIdx >= 0 {
		v.Field(metaIdx).Set(reflect.ValueOf(meta))
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.MappingNode {
		if !isNull(n) {
			d.errorf(n, "", "%s must be a mapping, not %s", what, kindName(n))
		}
		return
	}
	if !d.fits(n, what) {
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && d.spend(n.Content[i]); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "", "keys of %s must be plain names", what)
			continue
		}
		if seen[k.Value] {
			d.errorf(k, "remove one of them", "key %q appears twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, elem, fmt.Sprintf("%q", k.Value))
		v.SetMapIndex(reflect.ValueOf(k.Value), elem)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.SequenceNode {
		if !isNull(n) {
			d.errorf(n, "write a list: [a, b] or one `- item` per line", "%s must be a list, not %s", what, kindName(n))
		}
		return
	}
	if !d.fits(n, what) {
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", what, i))
	}
	v.Set(s)
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, "", "%s must be a single value, not %s", what, kindName(n))
		return
	}
	if isNull(n) {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Tag != "!!bool" || err != nil {
			d.errorf(n, "", "%s must be true or false, not %q", what, n.Value)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if n.Tag != "!!int" || err != nil || v.OverflowInt(i) {
			d.errorf(n, "", "%s must be a whole number, not %q", what, n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if (n.Tag != "!!int" && n.Tag != "!!float") || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.errorf(n, "", "%s must be a number, not %q", what, n.Value)
			return
		}
		v.SetFloat(f)
	default:
		panic("config: unsupported field kind " + v.Kind().String())
	}
}

// jsonCompatible converts yaml.v3's generic values so they marshal as JSON:
// payloads reach tools as JSON.
func jsonCompatible(x any) (any, error) {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			c, err := jsonCompatible(v)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
	case map[any]any:
		return nil, fmt.Errorf("mapping keys must be strings")
	case []any:
		for i, v := range t {
			c, err := jsonCompatible(v)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("NaN and infinity cannot be sent as JSON")
		}
	}
	return x, nil
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func keysOf(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// suggest names the closest known name, or lists them all as the known
// what (keys, tools, schedules).
func suggest(key string, known []string, what string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known " + what + ": " + strings.Join(known, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
