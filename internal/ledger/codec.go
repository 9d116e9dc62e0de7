package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/money"
)

// The ledger's line format is plain JSON, readable by jq and zcat. It is
// encoded and decoded here by hand for two reasons: the hash chain covers
// the exact bytes, so the encoding must be deterministic and stable; and
// replaying a month of a million events must take about a second, which
// encoding/json's reflection (about 5x slower on these lines) does not
// allow. TestCodecAgreesWithEncodingJSON and FuzzDecode hold the decoder to
// encoding/json's reading of every line.

// AppendJSON appends e as one JSON object (no newline) to dst. It never
// writes what the decoder refuses: a value beyond what a field can be read
// back as is written at that field's bound (money at ±money.Max, tier,
// attempt and pr within int32, times within the years 0 to 9999). A line
// the decoder refused would stop every later command.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = appendTimeField(dst, `,"ts":`, e.TS, true)
	dst = appendStringField(dst, `,"clock":`, e.Clock, false)
	dst = appendStringField(dst, `,"event":`, string(e.Event), true)
	dst = appendStringField(dst, `,"schedule_id":`, e.ScheduleID, true)
	dst = appendTimeField(dst, `,"slot":`, e.Slot, true)
	dst = appendStringField(dst, `,"idempotency_key":`, e.IdempotencyKey, true)
	dst = appendStringField(dst, `,"actor":`, e.Actor, true)
	dst = appendStringField(dst, `,"tenant":`, e.Tenant, false)
	dst = appendStringField(dst, `,"tool":`, e.Tool, true)
	dst = append(dst, `,"tier":`...)
	dst = strconv.AppendInt(dst, small(e.Tier), 10)
	dst = appendStringField(dst, `,"autonomy":`, e.Autonomy, false)
	dst = appendStringField(dst, `,"status":`, e.Status, true)
	dst = appendStringField(dst, `,"reason":`, e.Reason, false)
	dst = appendStringField(dst, `,"trace_id":`, e.TraceID, true)
	dst = appendStringField(dst, `,"scheduled_vs_manual":`, e.Mode, true)
	dst = appendIntField(dst, `,"attempt":`, small(e.Attempt))
	if !e.Usage.IsZero() {
		dst = append(dst, `,"usage":{`...)
		n := len(dst)
		dst = appendIntField(dst, `,"tokens":`, e.Usage.Tokens)
		dst = appendMoneyField(dst, `,"cost_usd":`, e.Usage.Cost)
		dst = appendIntField(dst, `,"wall_clock_ms":`, e.Usage.WallClockMS)
		dst = appendIntField(dst, `,"tool_calls":`, e.Usage.ToolCalls)
		dst = append(dst[:n], dst[n+1:]...) // drop the first comma
		dst = append(dst, '}')
	}
	dst = appendStringField(dst, `,"output":`, e.Output, false)
	dst = appendStringField(dst, `,"error":`, e.Error, false)
	dst = appendIntField(dst, `,"pr":`, small(e.PR))
	dst = appendStringField(dst, `,"by":`, e.By, false)
	dst = appendTimeField(dst, `,"expires_at":`, e.ExpiresAt, false)
	dst = appendStringField(dst, `,"payload_hash":`, e.PayloadHash, false)
	dst = appendStringField(dst, `,"comment":`, e.Comment, false)
	dst = appendTimeField(dst, `,"retry_at":`, e.RetryAt, false)
	dst = appendStringField(dst, `,"runner":`, e.Runner, false)
	dst = appendStringField(dst, `,"period":`, e.Period, false)
	dst = appendFloatField(dst, `,"threshold":`, e.Threshold)
	dst = appendMoneyField(dst, `,"spent_usd":`, e.Spent)
	dst = appendMoneyField(dst, `,"limit_usd":`, e.Limit)
	if len(e.Detail) > 0 {
		dst = append(dst, `,"detail":`...)
		var buf bytes.Buffer
		if json.Compact(&buf, e.Detail) == nil {
			dst = append(dst, buf.Bytes()...)
		} else {
			dst = append(dst, "null"...) // writers only put json.Marshal output here
		}
	}
	dst = appendStringField(dst, `,"prev":`, e.Prev, true)
	return append(dst, '}')
}

func appendStringField(dst []byte, key, v string, always bool) []byte {
	if v == "" && !always {
		return dst
	}
	return appendString(append(dst, key...), v)
}

func appendIntField(dst []byte, key string, v int64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// small is an int field as written: within int32, which the decoder reads
// on every platform (smallInt).
func small(v int) int64 { return min(max(int64(v), math.MinInt32), math.MaxInt32) }

func appendFloatField(dst []byte, key string, v float64) []byte {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return dst
	}
	dst = append(dst, key...)
	// encoding/json's float format: %f in the common range, %e outside it.
	if abs := math.Abs(v); abs < 1e-6 || abs >= 1e21 {
		return strconv.AppendFloat(dst, v, 'e', -1, 64)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

func appendMoneyField(dst []byte, key string, v money.USD) []byte {
	if v == 0 {
		return dst
	}
	return v.Append(append(dst, key...))
}

// TimeLayout is how the ledger writes times: UTC, whole seconds.
const TimeLayout = "2006-01-02T15:04:05Z"

// The times TimeLayout can write and RFC 3339 read back: four-digit years.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func appendTimeField(dst []byte, key string, t time.Time, always bool) []byte {
	if t.IsZero() {
		if always {
			return append(append(dst, key...), "null"...)
		}
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, '"')
	t = t.UTC().Truncate(time.Second)
	if t.Before(minTime) {
		t = minTime
	} else if t.After(maxTime) {
		t = maxTime
	}
	dst = t.AppendFormat(dst, TimeLayout)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; <, > and & are left alone (no HTML escaping).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript; escape
		// them like encoding/json so lines paste safely into a browser.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// errSyntax is wrapped by every decoding error.
var errSyntax = errors.New("invalid ledger line")

// decoder decodes ledger lines. It interns the small set of strings that
// repeat on every line (event kinds, schedule ids, actors, tools), so a
// replay does not allocate them a million times. Not safe for concurrent use.
type decoder struct {
	intern map[string]string
	// SkipOutput leaves Event.Output empty (it is still checked): replay
	// never needs tool output, and it is the largest field.
	SkipOutput bool
	// The previous line's values: a run's events follow each other, so
	// these usually repeat and need neither a new string nor a map lookup.
	lastKey, lastTrace                           string
	lastEvent, lastSched, lastActor, lastTool    string
	lastStatus, lastMode, lastTenant, lastReason string
	lastAutonomy                                 string
}

// newDecoder returns a decoder with an empty intern table.
func newDecoder() *decoder { return &decoder{intern: make(map[string]string, 256)} }

// Decode parses one line into e (which it resets) and returns the raw bytes
// of the prev field, so chain checks need not allocate it.
func (d *decoder) Decode(line []byte, e *Event) (prev []byte, err error) {
	*e = Event{}
	s := scanner{b: line}
	prev, err = s.event(d, e)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSyntax, err)
	}
	return prev, nil
}

// Unmarshal decodes one line with a throwaway decoder.
func Unmarshal(line []byte, e *Event) error {
	prev, err := newDecoder().Decode(line, e)
	if err == nil {
		e.Prev = string(prev)
	}
	return err
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		return s.errorf("expected %q", c)
	}
	s.i++
	return nil
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

// fieldNames lists the keys Decode understands, to refuse keys that differ
// only in case (encoding/json would match those; we would not).
var fieldNames = []string{"seq", "ts", "clock", "event", "schedule_id", "slot", "idempotency_key", "actor", "tenant", "tool",
	"tier", "autonomy", "status", "reason", "trace_id", "scheduled_vs_manual", "attempt", "usage", "output", "error", "pr", "by",
	"expires_at", "payload_hash", "comment", "retry_at", "runner", "period", "threshold", "spent_usd", "limit_usd", "detail", "prev"}

func (s *scanner) event(d *decoder, e *Event) (prev []byte, err error) {
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil, s.end()
	}
	for {
		key, err := s.key()
		if err != nil {
			return nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		s.ws()
		switch string(key) {
		case "seq":
			e.Seq, err = s.int()
		case "ts":
			e.TS, err = s.time()
		case "clock":
			e.Clock, err = s.str(d, true)
		case "event":
			var v string
			v, err = s.interned(d, &d.lastEvent)
			e.Event = Kind(v)
		case "schedule_id":
			e.ScheduleID, err = s.interned(d, &d.lastSched)
		case "slot":
			e.Slot, err = s.time()
		case "idempotency_key":
			e.IdempotencyKey, err = s.strLast(&d.lastKey)
		case "actor":
			e.Actor, err = s.interned(d, &d.lastActor)
		case "tenant":
			e.Tenant, err = s.interned(d, &d.lastTenant)
		case "tool":
			e.Tool, err = s.interned(d, &d.lastTool)
		case "tier":
			e.Tier, err = s.smallInt()
		case "autonomy":
			e.Autonomy, err = s.interned(d, &d.lastAutonomy)
		case "status":
			e.Status, err = s.interned(d, &d.lastStatus)
		case "reason":
			e.Reason, err = s.interned(d, &d.lastReason)
		case "trace_id":
			e.TraceID, err = s.strLast(&d.lastTrace)
		case "scheduled_vs_manual":
			e.Mode, err = s.interned(d, &d.lastMode)
		case "attempt":
			e.Attempt, err = s.smallInt()
		case "usage":
			err = s.usage(&e.Usage)
		case "output":
			if d.SkipOutput {
				_, _, err = s.rawStr()
			} else {
				e.Output, err = s.str(d, false)
			}
		case "error":
			e.Error, err = s.str(d, false)
		case "pr":
			e.PR, err = s.smallInt()
		case "by":
			e.By, err = s.str(d, true)
		case "expires_at":
			e.ExpiresAt, err = s.time()
		case "payload_hash":
			e.PayloadHash, err = s.str(d, false)
		case "comment":
			e.Comment, err = s.str(d, false)
		case "retry_at":
			e.RetryAt, err = s.time()
		case "runner":
			e.Runner, err = s.str(d, true)
		case "period":
			e.Period, err = s.str(d, true)
		case "threshold":
			e.Threshold, err = s.float()
		case "spent_usd":
			e.Spent, err = s.money()
		case "limit_usd":
			e.Limit, err = s.money()
		case "detail":
			start := s.i
			if err = s.skip(0); err == nil && string(s.b[start:s.i]) != "null" {
				e.Detail = append(json.RawMessage(nil), s.b[start:s.i]...)
			}
		case "prev":
			prev, _, err = s.rawStr()
		default:
			for _, n := range fieldNames {
				if strings.EqualFold(n, string(key)) {
					return nil, s.errorf("key %q must be written %q", key, n)
				}
			}
			err = s.skip(0)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		s.ws()
		if s.i >= len(s.b) {
			return nil, s.errorf("unterminated object")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return prev, s.end()
		default:
			return nil, s.errorf("expected , or }")
		}
	}
}

func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.errorf("data after the object")
	}
	return nil
}

// key reads an object key; keys never need unescaping in our format, and
// one that does is refused rather than misread.
func (s *scanner) key() ([]byte, error) {
	s.ws()
	raw, plain, err := s.rawStr()
	if err != nil {
		return nil, err
	}
	if !plain {
		return nil, s.errorf("object keys must be plain ASCII")
	}
	return raw, nil
}

// Byte classes inside a JSON string, for a single-pass scan.
const (
	chPlain   = iota
	chQuote   // ends the string
	chEscape  // backslash: the string needs unescaping
	chControl // invalid inside a string
	chHigh    // non-ASCII: needs UTF-8 validation
)

var strClass = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = chControl
	}
	t['"'], t['\\'] = chQuote, chEscape
	for c := 0x80; c < 0x100; c++ {
		t[c] = chHigh
	}
	return t
}()

// rawStr reads a string token and returns its content without unescaping;
// plain is false when it has escapes or non-ASCII bytes.
func (s *scanner) rawStr() (raw []byte, plain bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.errorf("expected a string")
	}
	start := s.i + 1
	plain = true
	b := s.b
	i := start
	// Eight bytes at a time while none is special (quote, backslash,
	// control, non-ASCII); the byte loop below handles the rest exactly.
	for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
		i += 8
	}
	for ; i < len(b); i++ {
		switch strClass[b[i]] {
		case chPlain:
		case chQuote:
			s.i = i + 1
			return b[start:i], plain, nil
		case chEscape:
			plain = false
			i++
		case chHigh:
			plain = false
		default:
			return nil, false, s.errorf("control character in string")
		}
	}
	return nil, false, s.errorf("unterminated string")
}

// SWAR constants: every byte 0x01, every byte 0x80.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any byte of w is '"', '\\', below 0x20 or above
// 0x7f. Each test is the exact "has a byte below n / equal to c" bit trick.
func special(w uint64) bool {
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((w|((w-ones*0x20)&^w))|((q-ones)&^q)|((bs-ones)&^bs))&highs != 0
}

func (s *scanner) isNull() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string value; intern is for low-cardinality fields.
func (s *scanner) str(d *decoder, intern bool) (string, error) {
	if s.isNull() {
		return "", nil
	}
	start := s.i
	raw, plain, err := s.rawStr()
	if err != nil {
		return "", err
	}
	if !plain {
		var v string
		if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
			return "", err
		}
		return v, nil
	}
	if intern {
		if v, ok := d.intern[string(raw)]; ok {
			return v, nil
		}
		v := string(raw)
		if len(d.intern) < 1<<16 {
			d.intern[v] = v
		}
		return v, nil
	}
	return string(raw), nil
}

// interned reads a low-cardinality string: the previous line's value when
// it repeats, else the intern table's.
func (s *scanner) interned(d *decoder, last *string) (string, error) {
	if s.i < len(s.b) && s.b[s.i] == '"' {
		if n := len(*last); s.i+n+1 < len(s.b) && s.b[s.i+n+1] == '"' && string(s.b[s.i+1:s.i+1+n]) == *last && plainRun(s.b[s.i+1:s.i+1+n]) {
			s.i += n + 2
			return *last, nil
		}
	}
	v, err := s.str(d, true)
	if err == nil {
		*last = v
	}
	return v, err
}

// plainRun reports whether b needs no unescaping or validation: what
// interned may take as is (values from the table or a previous line are
// always plain, but an escaped quote could fake a match).
func plainRun(b []byte) bool {
	for _, c := range b {
		if strClass[c] != chPlain {
			return false
		}
	}
	return true
}

// strLast reads a string value, reusing *last when it is the same. It
// repeats str's first half on purpose: sharing it through a helper made
// replay of a 1M-event month 6% slower.
func (s *scanner) strLast(last *string) (string, error) {
	if s.isNull() {
		return "", nil
	}
	start := s.i
	raw, plain, err := s.rawStr()
	if err != nil {
		return "", err
	}
	if !plain {
		var v string
		err := json.Unmarshal(s.b[start:s.i], &v)
		return v, err
	}
	if string(raw) != *last {
		*last = string(raw)
	}
	return *last, nil
}

// number returns the bytes of a JSON number token, checking its grammar.
func (s *scanner) number() ([]byte, bool, error) {
	start := s.i
	i := s.i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s.b) && s.b[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil, false, s.errorf("expected a number")
	}
	integer := true
	if i < len(s.b) && s.b[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return nil, false, s.errorf("bad number")
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		i++
		integer = false
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false, s.errorf("bad number")
		}
	}
	s.i = i
	return s.b[start:i], integer, nil
}

func (s *scanner) int() (int64, error) {
	if s.isNull() {
		return 0, nil
	}
	b, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, s.errorf("%s is not a whole number", b)
	}
	if len(b) < 19 { // cannot overflow: fast path
		var n int64
		neg := b[0] == '-'
		if neg {
			b = b[1:]
		}
		for _, c := range b {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, nil
	}
	return strconv.ParseInt(string(b), 10, 64)
}

func (s *scanner) smallInt() (int, error) {
	n, err := s.int()
	if err == nil && (n > math.MaxInt32 || n < math.MinInt32) {
		return 0, s.errorf("%d is out of range", n)
	}
	return int(n), err
}

func (s *scanner) float() (float64, error) {
	if s.isNull() {
		return 0, nil
	}
	b, _, err := s.number()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(string(b), 64)
}

func (s *scanner) money() (money.USD, error) {
	if s.isNull() {
		return 0, nil
	}
	b, _, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := money.ParseNumber(b)
	if err != nil {
		return 0, s.errorf("%v", err)
	}
	return v, nil
}

func (s *scanner) time() (time.Time, error) {
	if s.isNull() {
		return time.Time{}, nil
	}
	start := s.i
	raw, _, err := s.rawStr()
	if err != nil {
		return time.Time{}, err
	}
	if t, ok := ParseTime(raw); ok {
		return t, nil
	}
	var t time.Time
	err = json.Unmarshal(s.b[start:s.i], &t)
	return t.UTC(), err
}

// ParseTime reads a time written in TimeLayout (UTC, whole seconds)
// without the generic parser; false for anything else.
func ParseTime(b []byte) (time.Time, bool) {
	if len(b) != 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if t.Day() != d { // 31 April and the like: let time.Parse report it
		return time.Time{}, false
	}
	return t, true
}

func (s *scanner) usage(u *Usage) error {
	if s.isNull() {
		return nil
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.key()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		switch string(key) {
		case "tokens":
			u.Tokens, err = s.int()
		case "cost_usd":
			u.Cost, err = s.money()
		case "wall_clock_ms":
			u.WallClockMS, err = s.int()
		case "tool_calls":
			u.ToolCalls, err = s.int()
		default:
			for _, n := range []string{"tokens", "cost_usd", "wall_clock_ms", "tool_calls"} {
				if strings.EqualFold(n, string(key)) {
					return s.errorf("key %q must be written %q", key, n)
				}
			}
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.errorf("unterminated object")
		}
		if s.b[s.i] == '}' {
			s.i++
			return nil
		}
		if s.b[s.i] != ',' {
			return s.errorf("expected , or }")
		}
		s.i++
	}
}

// skip steps over any JSON value, checking its syntax.
func (s *scanner) skip(depth int) error {
	if depth > 64 {
		return s.errorf("nested too deeply")
	}
	s.ws()
	if s.i >= len(s.b) {
		return s.errorf("expected a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		start := s.i
		if _, _, err := s.rawStr(); err != nil {
			return err
		}
		if !json.Valid(s.b[start:s.i]) { // escapes and UTF-8
			return s.errorf("invalid string")
		}
		return nil
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == end {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.key(); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.errorf("unterminated value")
			}
			if s.b[s.i] == end {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return s.errorf("expected , or %c", end)
			}
			s.i++
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return nil
			}
		}
		return s.errorf("invalid literal")
	default:
		_, _, err := s.number()
		return err
	}
}
