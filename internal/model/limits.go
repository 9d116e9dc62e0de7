package model

import "time"

// Limits on what repository content can ask of astra. A pull request
// controls schedules/ and policies/, so every value that sizes a run's work
// is capped: `astra validate` refuses a value beyond its limit (naming the
// limit), and a configuration that validates cannot make a run take
// unbounded time or memory. The README's "Limits" table lists them.
const (
	// MinInterval is the shortest `interval` and `@every`. CI cron starts a
	// run every few minutes at best, so a finer interval only piles up slots.
	MinInterval = time.Minute
	// MaxCatchupMax caps catchup.max, the slots one schedule runs per run.
	MaxCatchupMax = 100
	// MaxCatchupWindow caps catchup.window, how late a slot may still run.
	MaxCatchupWindow = 31 * 24 * time.Hour
	// MaxSlotsPerSchedule bounds the new slots one schedule adds to a run's
	// plan whatever its configuration says (a second line of defence).
	MaxSlotsPerSchedule = MaxCatchupMax
	// MaxBackfillSlots caps the slots one astra backfill runs (its --max),
	// DefaultBackfillMax is its default: a wider range is refused, not cut.
	MaxBackfillSlots   = MaxCatchupMax
	DefaultBackfillMax = 24
	// MaxSchedules caps the schedules of a repository.
	MaxSchedules = 5000
	// MaxCandidatesPerRun bounds what one run plans, and so the decisions
	// (ledger events) it records; the rest waits for the next run.
	MaxCandidatesPerRun = 10_000
	// MaxFileBytes is the largest YAML file, or approval token, astra reads.
	MaxFileBytes = 1 << 20
	// MaxConfigBytes caps the YAML files of schedules/ and policies/ together.
	MaxConfigBytes = 4 << 20
	// MaxListItems caps each list or mapping of the configuration (actors,
	// tools, scopes, ...; payloads aside), the schedules list included.
	MaxListItems = MaxSchedules
	// MaxYAMLValues caps the values decoded from all YAML files together,
	// each use of an alias counted again, so that aliases cannot multiply
	// the work.
	MaxYAMLValues = 500_000
	// MaxPayloadBytes caps a schedule's payload, as JSON: tools get it in a
	// file and on stdin (in ASTRA_PAYLOAD too up to 32 KiB), and approval
	// pull requests show it.
	MaxPayloadBytes = 256 << 10
	// MaxFileErrors is how many problems are reported per file; decoding
	// of a file stops after as many.
	MaxFileErrors = 100
)
