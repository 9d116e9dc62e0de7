// Package money is exact US dollars: an integer count of micro-dollars.
// Costs are summed and compared against limits many times a run; with
// floats, ten steps of $0.01 fall short of $0.10 and a budget stops one
// step late. Values are written and read as plain decimals ("0.02"), so
// the ledger, the YAML and the usage lines tools print stay readable.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// USD is an amount in micro-dollars (1e-6 USD).
type USD int64

// Dollar is one US dollar.
const Dollar USD = 1_000_000

// Max is the largest amount astra accepts anywhere: a billion dollars.
// Sums saturate at it (Add), and an amount beyond it is written as Max, so
// whatever astra writes it reads back.
const Max USD = 1_000_000_000 * Dollar

// Clamp is u within [-Max, Max].
func (u USD) Clamp() USD { return min(max(u, -Max), Max) }

// Add is u+v, saturating at ±Max: a sum of amounts never wraps around,
// however many or however large they are.
func (u USD) Add(v USD) USD {
	return (u.Clamp() + v.Clamp()).Clamp() // |u|, |v| <= Max: no overflow
}

// PerThousand is what n units cost at u per thousand, rounded up to the
// micro-dollar (a price never undercounts) and saturating at Max; n < 0
// counts as 0.
func (u USD) PerThousand(n int64) USD {
	if n <= 0 || u <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(u.Clamp()), uint64(n))
	if hi >= 1000 { // the quotient would not fit in 64 bits
		return Max
	}
	q, r := bits.Div64(hi, lo, 1000)
	if r > 0 {
		q++
	}
	if q > uint64(Max) {
		return Max
	}
	return USD(q)
}

// Parse reads a decimal amount: "0.02", "5", "1.250000", "-0.5". More
// than six fraction digits, exponents, NaN and the like are errors: an
// amount is never rounded silently.
func Parse(s string) (USD, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	whole, frac, dot := strings.Cut(digits, ".")
	if whole == "" && (!dot || frac == "") || len(frac) > 6 || !allDigits(whole) || !allDigits(frac) {
		return 0, fmt.Errorf("%q is not an amount in dollars with at most 6 decimals, such as 0.25", s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > int64(Max/Dollar) {
		return 0, fmt.Errorf("%q is too large an amount", s)
	}
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	v := USD(w)*Dollar + USD(f)
	if v > Max {
		return 0, fmt.Errorf("%q is too large an amount", s)
	}
	if neg {
		v = -v
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FromFloat converts a float amount (a JSON number a tool printed and a
// decoder already turned into float64), rounding to the micro-dollar.
func FromFloat(f float64) (USD, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(Max/Dollar) {
		return 0, errors.New("amount out of range")
	}
	return USD(math.Round(f * float64(Dollar))), nil
}

// String is the shortest exact decimal: 0.02, 1.5, 3.
func (u USD) String() string { return string(u.Append(nil)) }

// Append appends the shortest exact decimal form of u to b; an amount
// beyond ±Max is written as ±Max (see Clamp), which Parse reads.
func (u USD) Append(b []byte) []byte {
	u = u.Clamp()
	if u < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendInt(b, int64(u/Dollar), 10)
	frac := int64(u % Dollar)
	if frac == 0 {
		return b
	}
	s := strconv.FormatInt(frac+1_000_000, 10)[1:] // six digits, zero-padded
	return append(append(b, '.'), strings.TrimRight(s, "0")...)
}

// Dollars formats for people: $1.50, or $0.000125 when cents would hide it.
func (u USD) Dollars() string {
	if u%10_000 == 0 {
		return fmt.Sprintf("$%d.%02d", int64(u/Dollar), int64(u%Dollar/10_000))
	}
	return "$" + u.String()
}

// Float is u in dollars, for charts and ratios only.
func (u USD) Float() float64 { return float64(u) / float64(Dollar) }

// MarshalJSON writes u as a JSON number.
func (u USD) MarshalJSON() ([]byte, error) { return u.Append(nil), nil }

// UnmarshalJSON reads a JSON number (see ParseNumber).
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := ParseNumber(b)
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseNumber reads a JSON number: exactly when it is a plain decimal
// (what astra writes), else (an exponent, as older ledgers and some tools
// write tiny amounts) through float64, rounded to the micro-dollar.
func ParseNumber(b []byte) (USD, error) {
	if v, err := Parse(string(b)); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an amount in dollars", b)
	}
	return FromFloat(f)
}

// UnmarshalYAML reads a YAML scalar exactly.
func (u *USD) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errors.New("an amount must be a single value, such as 0.25")
	}
	v, err := Parse(n.Value)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("amount %s is negative", n.Value)
	}
	*u = v
	return nil
}

// MarshalText writes u as a decimal (JSON Schema generation, YAML).
func (u USD) MarshalText() ([]byte, error) { return u.Append(nil), nil }
