package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// The dashboard is one self-contained file: the CSS, the SVG chart and the
// few lines of script (table sorting) are inline, and its
// Content-Security-Policy forbids loading anything else, so it works the
// same from GitHub Pages, an artifact or a file on disk.
//
//go:embed dashboard.html.tmpl
var dashboardTmpl string

var dashboard = template.Must(template.New("dashboard").Funcs(template.FuncMap{
	"usd": func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	"num": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"ts":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(dashboardTmpl))

// HTML writes the dashboard for d.
func HTML(w io.Writer, d Data) error {
	return dashboard.Execute(w, newView(d))
}

// view is Data plus everything the template should not compute: chart
// geometry, relative times and totals.
type view struct {
	Data
	Title          string
	MonthName      string
	DayUSD         float64
	MonthPct       float64 // 0..100 for the progress bar, clamped
	MonthLevel     string  // ok | warn | over
	DayLevel       string
	Runs           int
	Failures       int
	Chart          chart
	Schedules      []scheduleRow
	Pending        []pendingRow
	Dead           []deadRow // the newest deadShown
	DeadMore       int       // dead letters not in Dead
	DeadTotal      int       // all of them
	DeadBySchedule []deadGroup
	Next           []nextRow
	HasSchedules   bool
}

type scheduleRow struct {
	ScheduleStats
	LastAgo string
}

type pendingRow struct {
	Pending
	Age     string
	Expires string
	Expired bool
}

// deadGroup is one schedule's dead letters.
type deadGroup struct {
	Name           string
	Count          int
	Oldest, Newest time.Time
	Ago            string // since the newest
	Error, Key     string // the newest's
}

type deadRow struct {
	DeadLetter
	Ago string
}

type nextRow struct {
	ID, Name string
	At       time.Time
	In       string
}

// chart is the SVG bar chart of spend per day for the whole month, with the
// daily limit as a dashed line.
type chart struct {
	W, H           int
	Left, Bottom   float64 // plot area edges
	Bars           []bar
	LimitY         float64
	HasLimit       bool
	YTicks, XTicks []tick
}

type bar struct {
	X, Y, W, H float64
	Day        string
	USD        float64
	Runs       int
	Over       bool
}

type tick struct {
	Pos   float64
	Label string
}

func newView(d Data) view {
	v := view{Data: d, Title: "astra", HasSchedules: len(d.Schedules) > 0}
	if name := cmp.Or(d.Repository, d.Name); name != "" {
		v.Title = "astra · " + name
	}
	month, err := time.Parse("2006-01", d.Month)
	if err != nil {
		month = time.Date(d.Generated.Year(), d.Generated.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	v.MonthName = month.Format("January 2006")
	if n := len(d.Spend); n > 0 {
		v.DayUSD = d.Spend[n-1].USD
	}
	v.MonthPct, v.MonthLevel = level(d.MonthUSD, d.MonthLimitUSD)
	_, v.DayLevel = level(v.DayUSD, d.DayLimitUSD)
	v.Chart = newChart(d, month)

	for _, s := range d.Schedules {
		v.Runs += s.Runs
		v.Failures += s.Failures
		r := scheduleRow{ScheduleStats: s}
		if !s.LastRun.IsZero() {
			r.LastAgo = ago(d.Generated.Sub(s.LastRun))
		}
		v.Schedules = append(v.Schedules, r)
		if !s.Next.IsZero() {
			v.Next = append(v.Next, nextRow{ID: s.ID, Name: s.Name, At: s.Next, In: "in " + span(s.Next.Sub(d.Generated))})
		}
	}
	sort.SliceStable(v.Next, func(i, j int) bool { return v.Next[i].At.Before(v.Next[j].At) })
	if len(v.Next) > 10 {
		v.Next = v.Next[:10]
	}
	for _, p := range d.Pending {
		r := pendingRow{Pending: p, Age: ago(d.Generated.Sub(p.RequestedAt))}
		if left := p.ExpiresAt.Sub(d.Generated); left > 0 {
			r.Expires = "in " + span(left)
		} else {
			r.Expires, r.Expired = "expired", true
		}
		v.Pending = append(v.Pending, r)
	}
	v.Dead, v.DeadBySchedule = deadLetters(d)
	v.DeadTotal = len(d.DeadLetters)
	v.DeadMore = len(d.DeadLetters) - len(v.Dead)
	return v
}

// deadShown bounds the dead letters the page lists one by one (the newest);
// the summary by schedule counts them all.
const deadShown = 100

// deadLetters are the newest dead letters, newest first, and all of them
// by schedule, most first.
func deadLetters(d Data) (newest []deadRow, bySchedule []deadGroup) {
	groups := map[string]*deadGroup{}
	for _, dl := range d.DeadLetters {
		g := groups[dl.Name]
		if g == nil {
			g = &deadGroup{Name: dl.Name, Oldest: dl.At}
			groups[dl.Name] = g
		}
		g.Count++
		if !dl.At.Before(g.Newest) {
			g.Newest, g.Error, g.Key = dl.At, dl.Error, dl.Key
		}
		if dl.At.Before(g.Oldest) {
			g.Oldest = dl.At
		}
	}
	for _, g := range groups {
		g.Ago = ago(d.Generated.Sub(g.Newest))
		bySchedule = append(bySchedule, *g)
	}
	sort.Slice(bySchedule, func(i, j int) bool {
		if bySchedule[i].Count != bySchedule[j].Count {
			return bySchedule[i].Count > bySchedule[j].Count
		}
		return bySchedule[i].Name < bySchedule[j].Name
	})
	for i := len(d.DeadLetters) - 1; i >= 0 && len(newest) < deadShown; i-- { // Collect sorts them oldest first
		dl := d.DeadLetters[i]
		newest = append(newest, deadRow{DeadLetter: dl, Ago: ago(d.Generated.Sub(dl.At))})
	}
	return newest, bySchedule
}

// level is the fill of a limit bar and its colour class (the seed's 80%
// alert threshold turns it amber).
func level(v, limit float64) (pct float64, class string) {
	if limit <= 0 {
		return 0, "ok"
	}
	pct = math.Min(100, 100*v/limit)
	switch {
	case v >= limit:
		return pct, "over"
	case v >= 0.8*limit:
		return pct, "warn"
	}
	return pct, "ok"
}

func newChart(d Data, month time.Time) chart {
	const w, h, left, right, top, bottom = 760, 240, 56.0, 12.0, 14.0, 28.0
	c := chart{W: w, H: h, Left: left, Bottom: h - bottom}
	days := month.AddDate(0, 1, -1).Day()
	maxUSD := d.DayLimitUSD
	for _, s := range d.Spend {
		maxUSD = math.Max(maxUSD, s.USD)
	}
	yMax := niceCeil(maxUSD * 1.1)
	plotW, plotH := w-left-right, h-top-bottom
	slot := plotW / float64(days)
	y := func(usd float64) float64 { return c.Bottom - plotH*usd/yMax }
	for i, s := range d.Spend {
		top := y(s.USD)
		c.Bars = append(c.Bars, bar{
			X: left + float64(i)*slot + slot*0.15, W: slot * 0.7, Y: top, H: c.Bottom - top,
			Day: s.Day, USD: s.USD, Runs: s.Runs, Over: d.DayLimitUSD > 0 && s.USD > d.DayLimitUSD,
		})
	}
	if d.DayLimitUSD > 0 {
		c.HasLimit, c.LimitY = true, y(d.DayLimitUSD)
	}
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: y(v), Label: fmt.Sprintf("$%.2f", v)})
	}
	for _, day := range []int{1, 5, 10, 15, 20, 25, days} {
		c.XTicks = append(c.XTicks, tick{Pos: left + (float64(day)-0.5)*slot, Label: fmt.Sprint(day)})
	}
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten so the axis labels
// are round numbers; an empty month still gets a $1 axis.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// ago is a coarse age ("3h 5m ago") for a static page read later.
func ago(d time.Duration) string {
	if d < 0 {
		return "just now"
	}
	return span(d) + " ago"
}

func span(d time.Duration) string {
	d = d.Round(time.Minute)
	days := int(d / (24 * time.Hour))
	hours := int(d % (24 * time.Hour) / time.Hour)
	mins := int(d % time.Hour / time.Minute)
	var b strings.Builder
	switch {
	case days > 0:
		fmt.Fprintf(&b, "%dd %dh", days, hours)
	case hours > 0:
		fmt.Fprintf(&b, "%dh %dm", hours, mins)
	default:
		fmt.Fprintf(&b, "%dm", mins)
	}
	return b.String()
}
