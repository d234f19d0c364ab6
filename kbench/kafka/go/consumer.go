package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// record is one consumed record as the loop classifies it: its value's length and the value of
// its last kb header (nil when it has none).
type record struct {
	valueLen int
	kb       []byte
	hasKb    bool
}

// consumer is one client's read path: every partition of the topic assigned at its high
// watermark, resolved before start returns.
type consumer interface {
	partitions() int
	records() <-chan record
	errors() *errCounts
	close()
	config() map[string]any
}

// runConsumer is the consumer of csrc/core/consumer.c: READY once every partition's start
// offset is resolved, then each record classified by its kb header until every expected
// sequence number was seen or the timeout passed.
func runConsumer(j job, b backend) (map[string]any, error) {
	topic := j.str("topic", "")
	if topic == "" {
		return nil, fmt.Errorf("job.topic: missing")
	}
	runID := j.int("run_id", 0)
	expected := j.int("expected", 0)
	every := j.int("header_sample", 1000)
	if every < 1 {
		every = 1
	}
	timeoutS := j.num("timeout", 60)
	samplesExpected := int64(0)
	if expected > 0 {
		samplesExpected = (expected + every - 1) / every
	}
	c, err := b.newConsumer(j, j.props())
	if err != nil {
		return nil, err
	}
	e2e := NewHistogram()
	// the latency window (job latency_skip_s): e2e records only records sent at or after the
	// first kb header's send time + the skip; the interval histograms keep every record
	latSkip, latFrom, latOpen := int64(j.num("latency_skip_s", 0)*1e9), int64(0), false
	// latency_from_seq > 0: by sequence number instead (one producer at a fixed rate: exactly its
	// messages due from the skip)
	latFromSeq := int64(j.num("latency_from_seq", 0))
	seen := make([]bool, samplesExpected)
	var records, bytes, sampled, samplesSeen, sampleDuplicates, outOfRange, foreign, noHeader int64
	var tFirst, tLast int64
	timedOut := false

	w := newCPUWindow(j.num("skip_s", 0))
	say("READY")
	tStart := mono()
	startWall := wallNs()
	w.start()
	series := newIntervals(int64(j.num("interval_s", 0)*1e9), tStart)
	deadline := tStart + int64(timeoutS*1e9)
	timer := time.NewTimer(time.Duration(deadline - mono()))
	ch := c.records()
loop:
	for expected == 0 || records < expected || samplesSeen < samplesExpected {
		var r record
		select {
		case r = <-ch:
		case <-timer.C:
			timedOut = true
			break loop
		}
		now := mono()
		t, seq, run := int64(-1), int64(-1), int64(0)
		if r.hasKb && len(r.kb) == 24 {
			t = int64(binary.BigEndian.Uint64(r.kb))
			seq = int64(binary.BigEndian.Uint64(r.kb[8:]))
			run = int64(binary.BigEndian.Uint64(r.kb[16:]))
		}
		if t >= 0 && seq >= 0 && runID != 0 && run != runID {
			foreign++ // a sampled record of another run: not ours
			continue
		}
		if records == 0 {
			tFirst = now
		}
		tLast = now
		records++
		bytes += int64(r.valueLen)
		if series != nil {
			series.counted(now, int64(r.valueLen))
		}
		if t < 0 || seq < 0 {
			noHeader++
			continue
		}
		sampled++
		if !latOpen && latFromSeq <= 0 {
			// no skip: every record (partitions are read in no order of send time)
			latFrom, latOpen = int64(math.MinInt64), true
			if latSkip > 0 {
				latFrom = t + latSkip
			}
		}
		if (latFromSeq > 0 && seq >= latFromSeq) || (latFromSeq <= 0 && t >= latFrom) {
			e2e.Record(now - t)
		}
		if series != nil {
			series.latency(now, now-t, false)
		}
		if samplesExpected > 0 {
			switch {
			case seq%every != 0 || seq/every >= samplesExpected:
				outOfRange++
			case seen[seq/every]:
				sampleDuplicates++
			default:
				seen[seq/every] = true
				samplesSeen++
			}
		}
	}
	timer.Stop()
	cpu, cpuWin := w.stop()
	cfg := c.config()
	c.close()
	tEnd := mono()
	endWall := wallNs()
	duplicates := sampleDuplicates
	if expected > 0 && records-expected > duplicates {
		duplicates = records - expected
	}
	unique := records - duplicates
	samplesMissing := samplesExpected - samplesSeen
	lost := int64(0)
	if expected > 0 {
		lost = max(0, expected-unique, samplesMissing)
	}
	var receive any
	if records > 0 {
		receive = window(tFirst, tLast, startWall+(tFirst-tStart), startWall+(tLast-tStart))
	}
	out := map[string]any{
		"records": records, "bytes": bytes, "unique": unique, "duplicates": duplicates, "lost": lost,
		"sampled": sampled, "samples_missing": samplesMissing, "stored_records": -1,
		"out_of_range": outOfRange, "foreign": foreign, "no_header": noHeader,
		"partitions": c.partitions(), "timed_out": timedOut, "errors": c.errors().snapshot(),
		"e2e": e2e.Summary(), "cpu": cpu, "client_config": cfg,
		"windows": map[string]any{
			"run":     window(tStart, tEnd, startWall, endWall),
			"receive": receive,
			"cpu":     cpuWin,
		},
	}
	if series != nil {
		out["intervals"] = series.finish(tEnd)
		out["intervals_latency"] = "e2e"
	}
	return out, nil
}
