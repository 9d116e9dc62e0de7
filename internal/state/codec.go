package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/ledger"
)

// The snapshot's encoding of a State is derived from State's type, so a
// field added to State (or to a type it holds) is stored without a change
// here, and its shape (a hash of that layout) changes, which retires the
// snapshots written before. A field of a kind the encoding cannot hold
// makes stateCodec fail, and TestSnapshotCoversState with it.
//
// Each stored field is a section: a scalar is one line "name<TAB>value"; a
// map is a header line "name<TAB>columns..." and one line per entry,
// "<TAB>key<TAB>values...", sorted by key. One entry per line, in a stable
// order, keeps the file small in git's deltas: a run rewrites the lines of
// what it changed. Strings are written as they are unless they hold a tab,
// a line break, a backslash, a leading quote or invalid UTF-8; then they are
// Go-quoted. Times are UTC in whole seconds, like the ledger's.

// section is one stored field of State.
type section struct {
	name  string
	index []int // field index path from State
	kind  sectionKind
	elem  reflect.Type // map value type (for structs, the struct type)
	ptr   bool         // map values are pointers to elem
	cols  []column     // struct columns; scalar values have one unnamed column
}

type sectionKind int

const (
	scalarSection sectionKind = iota // a plain value
	valueSection                     // map[string]scalar
	listSection                      // map[string][]scalar
	recordSection                    // map[string]struct or map[string]*struct
)

// column is one value of an entry: a struct field, or the value itself.
type column struct {
	name  string
	index int // struct field index; -1 for the value itself
	enc   func(dst []byte, v reflect.Value) []byte
	dec   func(v reflect.Value, b []byte, in interner) error
}

type codec struct {
	sections []section
	byName   map[string]int
	shape    string
}

// stateCodec is the codec of State, built once; err says why State cannot
// be stored (a test keeps it nil).
var stateCodec, stateCodecErr = newCodec(reflect.TypeFor[State]())

func newCodec(t reflect.Type) (*codec, error) {
	c := &codec{byName: map[string]int{}}
	if err := c.addFields(t, nil); err != nil {
		return nil, err
	}
	var desc strings.Builder
	fmt.Fprintf(&desc, "astra-state %d\n", snapshotVersion)
	for i, s := range c.sections {
		c.byName[s.name] = i
		fmt.Fprintf(&desc, "%s %d %s", s.name, s.kind, s.elem)
		for _, col := range s.cols {
			fmt.Fprintf(&desc, " %s", col.name)
		}
		if s.kind == recordSection {
			for i := range s.elem.NumField() {
				fmt.Fprintf(&desc, " %s", s.elem.Field(i).Type)
			}
		}
		desc.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(desc.String()))
	c.shape = hex.EncodeToString(sum[:8])
	return c, nil
}

// addFields adds a section for every stored field of struct t: exported
// fields not tagged `json:"-"`, and the fields of embedded structs.
func (c *codec) addFields(t reflect.Type, at []int) error {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(slices.Clone(at), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := c.addFields(f.Type, index); err != nil {
				return err
			}
			continue
		}
		name, stored := jsonName(f)
		if !f.IsExported() || !stored {
			continue
		}
		s, err := newSection(name, index, f.Type)
		if err != nil {
			return fmt.Errorf("state field %s: %w", f.Name, err)
		}
		c.sections = append(c.sections, s)
	}
	return nil
}

// jsonName is a field's name in its json tag (else its Go name); stored
// is false for `json:"-"`.
func jsonName(f reflect.StructField) (name string, stored bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	if n, _, _ := strings.Cut(tag, ","); n != "" {
		return n, true
	}
	return f.Name, true
}

func newSection(name string, index []int, t reflect.Type) (section, error) {
	s := section{name: name, index: index, elem: t}
	if t.Kind() != reflect.Map {
		col, err := valueColumn("", -1, t)
		s.cols = []column{col}
		return s, err
	}
	if t.Key().Kind() != reflect.String {
		return s, fmt.Errorf("map keys must be strings, not %s", t.Key())
	}
	v := t.Elem()
	s.elem = v
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		s.ptr, v, s.elem = true, v.Elem(), v.Elem()
	}
	switch {
	case v.Kind() == reflect.Struct && v != timeType:
		s.kind = recordSection
		for i := range v.NumField() {
			f := v.Field(i)
			fname, stored := jsonName(f)
			if !f.IsExported() || !stored {
				return s, fmt.Errorf("%s.%s is not stored: give it an exported, json-named field", v, f.Name)
			}
			col, err := valueColumn(fname, i, f.Type)
			if err != nil {
				return s, fmt.Errorf("%s.%s: %w", v, f.Name, err)
			}
			s.cols = append(s.cols, col)
		}
	case v.Kind() == reflect.Slice && v.Elem().Kind() != reflect.Uint8:
		s.kind = listSection
		col, err := valueColumn("", -1, v.Elem())
		s.cols = []column{col}
		return s, err
	default:
		s.kind = valueSection
		col, err := valueColumn("", -1, v)
		s.cols = []column{col}
		return s, err
	}
	return s, nil
}

var timeType = reflect.TypeFor[time.Time]()

// Column encoders and decoders of one scalar.
type (
	encFunc = func(dst []byte, v reflect.Value) []byte
	decFunc = func(v reflect.Value, b []byte, in interner) error
)

// valueColumn encodes and decodes one scalar of type t.
func valueColumn(name string, index int, t reflect.Type) (column, error) {
	c := column{name: name, index: index}
	var err error
	switch {
	case t == timeType:
		c.enc, c.dec = timeCodec()
	case t.Kind() == reflect.String:
		c.enc, c.dec = stringCodec()
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		c.enc, c.dec = bytesCodec()
	case t.Kind() == reflect.Bool:
		c.enc, c.dec = boolCodec()
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		c.enc, c.dec = intCodec(t)
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		c.enc, c.dec = uintCodec(t)
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		c.enc, c.dec = floatCodec(t)
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		c.enc, c.dec, err = jsonCodec(t)
	default:
		err = fmt.Errorf("a snapshot cannot store a %s", t)
	}
	return c, err
}

// timeCodec codes a time, empty when zero.
func timeCodec() (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte {
		if tm := v.Interface().(time.Time); !tm.IsZero() {
			dst = tm.UTC().AppendFormat(dst, ledger.TimeLayout)
		}
		return dst
	}
	dec = func(v reflect.Value, b []byte, _ interner) error {
		if len(b) == 0 {
			return nil
		}
		tm, err := parseTime(b)
		v.Set(reflect.ValueOf(tm))
		return err
	}
	return enc, dec
}

// stringCodec codes a string.
func stringCodec() (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte { return appendText(dst, v.String()) }
	dec = func(v reflect.Value, b []byte, in interner) error {
		s, err := in.text(b)
		v.SetString(s)
		return err
	}
	return enc, dec
}

// bytesCodec codes a byte slice, as text.
func bytesCodec() (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte { return appendText(dst, string(v.Bytes())) }
	dec = func(v reflect.Value, b []byte, in interner) error {
		if len(b) == 0 {
			return nil
		}
		s, err := in.text(b)
		v.SetBytes([]byte(s))
		return err
	}
	return enc, dec
}

// boolCodec codes a boolean, empty when false.
func boolCodec() (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte {
		if v.Bool() {
			dst = append(dst, "true"...)
		}
		return dst
	}
	dec = func(v reflect.Value, b []byte, _ interner) error {
		switch string(b) {
		case "":
		case "true":
			v.SetBool(true)
		default:
			return fmt.Errorf("bad boolean %q", b)
		}
		return nil
	}
	return enc, dec
}

// intCodec codes a signed integer, empty when zero.
func intCodec(t reflect.Type) (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte {
		if n := v.Int(); n != 0 {
			dst = strconv.AppendInt(dst, n, 10)
		}
		return dst
	}
	dec = func(v reflect.Value, b []byte, _ interner) error {
		if len(b) == 0 {
			return nil
		}
		n, err := strconv.ParseInt(string(b), 10, t.Bits())
		v.SetInt(n)
		return err
	}
	return enc, dec
}

// uintCodec codes an unsigned integer, empty when zero.
func uintCodec(t reflect.Type) (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte {
		if n := v.Uint(); n != 0 {
			dst = strconv.AppendUint(dst, n, 10)
		}
		return dst
	}
	dec = func(v reflect.Value, b []byte, _ interner) error {
		if len(b) == 0 {
			return nil
		}
		n, err := strconv.ParseUint(string(b), 10, t.Bits())
		v.SetUint(n)
		return err
	}
	return enc, dec
}

// floatCodec codes a float, empty when zero.
func floatCodec(t reflect.Type) (enc encFunc, dec decFunc) {
	enc = func(dst []byte, v reflect.Value) []byte {
		if f := v.Float(); f != 0 {
			dst = strconv.AppendFloat(dst, f, 'g', -1, t.Bits())
		}
		return dst
	}
	dec = func(v reflect.Value, b []byte, _ interner) error {
		if len(b) == 0 {
			return nil
		}
		f, err := strconv.ParseFloat(string(b), t.Bits())
		v.SetFloat(f)
		return err
	}
	return enc, dec
}

// jsonCodec codes a nested record as JSON.
func jsonCodec(t reflect.Type) (enc encFunc, dec decFunc, err error) {
	// A nested record (a claim's plan, the last move) is rare and
	// small: it is stored as JSON, empty for a nil pointer, provided
	// JSON keeps every field.
	if err := jsonKeepsAll(t); err != nil {
		return nil, nil, err
	}
	enc = func(dst []byte, v reflect.Value) []byte {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return dst
		}
		b, _ := json.Marshal(v.Interface()) // cannot fail: plain fields (jsonKeepsAll) and raw JSON read from the ledger
		return appendText(dst, string(b))
	}
	dec = func(v reflect.Value, b []byte, in interner) error {
		if len(b) == 0 {
			return nil
		}
		s, err := in.text(b)
		if err != nil {
			return err
		}
		return json.Unmarshal([]byte(s), v.Addr().Interface())
	}
	return enc, dec, nil
}

// jsonKeepsAll fails when encoding/json would drop a field of t (or of a
// struct it holds): unexported, or named "-".
func jsonKeepsAll(t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if _, stored := jsonName(f); !f.IsExported() || !stored {
			return fmt.Errorf("%s.%s is not stored: give it an exported, json-named field", t, f.Name)
		}
		if err := jsonKeepsAll(f.Type); err != nil {
			return err
		}
	}
	return nil
}

// appendText writes s as is when that is unambiguous, else Go-quoted.
func appendText(dst []byte, s string) []byte {
	if s != "" && s[0] == '"' || !utf8.ValidString(s) {
		return strconv.AppendQuote(dst, s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '\\' || c == 0x7f {
			return strconv.AppendQuote(dst, s)
		}
	}
	return append(dst, s...)
}

// interner shares the strings a snapshot repeats (ids, statuses, tools).
type interner map[string]string

func (in interner) text(b []byte) (string, error) {
	if len(b) > 0 && b[0] == '"' {
		return strconv.Unquote(string(b))
	}
	if s, ok := in[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if len(s) <= 64 {
		in[s] = s
	}
	return s, nil
}

// parseTime reads a time as the encoder writes it: 2006-01-02T15:04:05Z.
func parseTime(b []byte) (time.Time, error) {
	if t, ok := ledger.ParseTime(b); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("bad time %q", b)
}

// encode appends the stored fields of st whose section sel selects (all
// when sel is nil).
func (c *codec) encode(dst []byte, st *State, sel func(name string) bool) []byte {
	root := reflect.ValueOf(st).Elem()
	type entry struct {
		key string
		val reflect.Value
	}
	var entries []entry
	for _, s := range c.sections {
		if sel != nil && !sel(s.name) {
			continue
		}
		v := root.FieldByIndex(s.index)
		dst = append(dst, s.name...)
		if s.kind == scalarSection {
			dst = append(dst, '\t')
			dst = append(s.cols[0].enc(dst, v), '\n')
			continue
		}
		for _, col := range s.cols {
			if col.name != "" {
				dst = append(append(dst, '\t'), col.name...)
			}
		}
		dst = append(dst, '\n')
		entries = entries[:0]
		for it := v.MapRange(); it.Next(); {
			entries = append(entries, entry{it.Key().String(), it.Value()})
		}
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		for _, e := range entries {
			dst = appendText(append(dst, '\t'), e.key)
			val := e.val
			switch s.kind {
			case valueSection:
				dst = s.cols[0].enc(append(dst, '\t'), val)
			case listSection:
				for i := range val.Len() {
					dst = s.cols[0].enc(append(dst, '\t'), val.Index(i))
				}
			case recordSection:
				if s.ptr {
					val = val.Elem()
				}
				for _, col := range s.cols {
					dst = col.enc(append(dst, '\t'), val.Field(col.index))
				}
			}
			dst = append(dst, '\n')
		}
	}
	return dst
}

// decode reads sections as encode writes them into st, whose maps must be
// empty; line is the line number of data's first line, for errors. A
// section sel does not select is refused (any, when sel is nil).
func (c *codec) decode(data []byte, line int, st *State, sel func(name string) bool) error {
	root := reflect.ValueOf(st).Elem()
	in := interner{}
	var (
		cur    *section
		m      reflect.Value
		fields [][]byte
	)
	for len(data) > 0 {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		fields = splitTabs(fields[:0], l)
		err := c.decodeLine(root, fields, &cur, &m, in, sel)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		line++
	}
	return nil
}

func (c *codec) decodeLine(root reflect.Value, fields [][]byte, cur **section, m *reflect.Value, in interner, sel func(string) bool) error {
	if len(fields[0]) > 0 {
		return c.decodeSection(root, fields, cur, m, in, sel)
	}
	s := *cur
	if s == nil || s.kind == scalarSection || len(fields) < 2 {
		return fmt.Errorf("an entry outside a map")
	}
	key, err := in.text(fields[1])
	if err != nil {
		return err
	}
	val, err := s.decodeEntry(key, fields[2:], in)
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.name, key, err)
	}
	m.SetMapIndex(reflect.ValueOf(key), val)
	return nil
}

// decodeSection reads a section's header line: a scalar's value, or the
// map that the following entries fill.
func (c *codec) decodeSection(root reflect.Value, fields [][]byte, cur **section, m *reflect.Value, in interner, sel func(string) bool) error {
	i, ok := c.byName[string(fields[0])]
	if !ok || sel != nil && !sel(string(fields[0])) {
		return fmt.Errorf("unknown section %q", fields[0])
	}
	s := &c.sections[i]
	*cur = s
	v := root.FieldByIndex(s.index)
	if s.kind == scalarSection {
		if len(fields) != 2 {
			return fmt.Errorf("%s: want one value", s.name)
		}
		return s.cols[0].dec(v, fields[1], in)
	}
	if s.kind == recordSection && !sameColumns(s, fields[1:]) {
		return fmt.Errorf("%s: want columns %s", s.name, columnNames(s))
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	*m = v
	return nil
}

func sameColumns(s *section, names [][]byte) bool {
	if len(names) != len(s.cols) {
		return false
	}
	for k, col := range s.cols {
		if string(names[k]) != col.name {
			return false
		}
	}
	return true
}

// decodeEntry reads the value of one map entry of s.
func (s *section) decodeEntry(key string, vals [][]byte, in interner) (reflect.Value, error) {
	switch s.kind {
	case valueSection:
		if len(vals) != 1 {
			return reflect.Value{}, fmt.Errorf("want one value")
		}
		val := reflect.New(s.elem).Elem()
		return val, s.cols[0].dec(val, vals[0], in)
	case listSection:
		val := reflect.MakeSlice(s.elem, len(vals), len(vals))
		for i, b := range vals {
			if err := s.cols[0].dec(val.Index(i), b, in); err != nil {
				return val, err
			}
		}
		return val, nil
	}
	if len(vals) != len(s.cols) {
		return reflect.Value{}, fmt.Errorf("want %d values, have %d", len(s.cols), len(vals))
	}
	p := reflect.New(s.elem)
	for i, col := range s.cols {
		if err := col.dec(p.Elem().Field(col.index), vals[i], in); err != nil {
			return p, fmt.Errorf("%s: %w", col.name, err)
		}
	}
	if !s.ptr {
		return p.Elem(), nil
	}
	return p, nil
}

func columnNames(s *section) string {
	var names []string
	for _, c := range s.cols {
		names = append(names, c.name)
	}
	return strings.Join(names, " ")
}

func splitTabs(dst [][]byte, l []byte) [][]byte {
	for {
		i := bytes.IndexByte(l, '\t')
		if i < 0 {
			return append(dst, l)
		}
		dst, l = append(dst, l[:i]), l[i+1:]
	}
}
