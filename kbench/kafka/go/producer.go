package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// producer is one client's send path.  send hands one message to the client (blocking while the
// client's queue is full: its back-pressure); the client reports each delivery to acks.
type producer interface {
	send(seq int64, key, value, kb []byte, sentNs, dueNs int64) error
	// flush waits (bounded) for every outstanding delivery and closes the client.
	flush(timeout time.Duration) error
	// stats is the protocol's client_stats object; read after flush.
	stats() map[string]any
	// config is the settings this run used, in the client's names (the RESULT's client.config).
	config() map[string]any
}

// acks holds the delivery outcomes, written by the client's goroutines.
type acks struct {
	mu        sync.Mutex
	service   *Histogram
	corrected *Histogram
	delivered int64
	failed    int64 // failed delivery reports (not send calls that failed at once)
	errors    *errCounts
	series    *intervals // docs/drivers.md section 4.4 (nil: none); set before the first send
	// latFrom opens the latency window (job latency_skip_s): messages due (fixed rate) or sent
	// (saturated) before it stay out of service, corrected and delay; set before the first send
	latFrom int64
}

func newAcks() *acks {
	return &acks{service: NewHistogram(), corrected: NewHistogram(), errors: newErrCounts()}
}

// ok records one delivered message: service = ack - send, corrected = ack - due (due < 0: saturated).
func (a *acks) ok(now, sent, due int64) {
	a.mu.Lock()
	a.delivered++
	ref := sent
	if due >= 0 {
		ref = due
	}
	if ref >= a.latFrom {
		a.service.Record(now - sent)
		if due >= 0 {
			a.corrected.Record(now - due)
		}
	}
	a.mu.Unlock()
	if a.series != nil {
		if due >= 0 {
			a.series.latency(now, now-due, true)
		} else {
			a.series.latency(now, now-sent, true)
		}
	}
}

// fail records n failed delivery reports under the client's error message.
func (a *acks) fail(name string, n int64) {
	a.errors.add(name, n)
	a.mu.Lock()
	a.failed += n
	a.mu.Unlock()
	if a.series != nil {
		a.series.failedAt(mono(), n)
	}
}

// readCorpus reads a lenprefixed corpus file: 4-byte big-endian length, then the bytes.
func readCorpus(path, format string) ([][]byte, error) {
	if format != "lenprefixed" {
		return nil, fmt.Errorf("corpus_format '%s' is not supported; use lenprefixed", format)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("corpus file %s: %v", path, err)
	}
	var out [][]byte
	for len(b) >= 4 {
		n := binary.BigEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return nil, fmt.Errorf("corpus file %s is truncated or not lenprefixed", path)
		}
		out = append(out, b[4:4+n:4+n])
		b = b[4+n:]
	}
	if len(b) != 0 || len(out) == 0 {
		return nil, fmt.Errorf("corpus file %s has no records or a truncated tail", path)
	}
	return out, nil
}

// kbHeader is the 24-byte kb header value: send time, sequence number, run id (big-endian).
func kbHeader(sent, seq, runID int64) []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, uint64(sent))
	binary.BigEndian.PutUint64(b[8:], uint64(seq))
	binary.BigEndian.PutUint64(b[16:], uint64(runID))
	return b
}

type producerJob struct {
	topic       string
	fixed       bool
	rate        float64
	count       int64
	duration    float64
	runID       int64
	headerEvery int64
	tick        int64
	keys        string
	nkeys       int64
	partition   int64
	timeoutS    float64
}

func parseProducerJob(j job) (producerJob, error) {
	p := producerJob{
		topic:       j.str("topic", ""),
		rate:        j.num("rate", 0),
		count:       j.int("count", 0),
		duration:    j.num("duration", 0),
		runID:       j.int("run_id", 0),
		headerEvery: j.int("header_sample", 1000),
		keys:        j.str("keys", "none"),
		nkeys:       j.int("nkeys", 0),
		partition:   j.int("partition", -1),
		timeoutS:    j.num("connect_timeout", 10),
	}
	if p.topic == "" {
		return p, fmt.Errorf("job.topic: missing")
	}
	mode := j.str("mode", "fixed-rate")
	p.fixed = mode == "fixed-rate"
	if !p.fixed && mode != "saturated" {
		return p, fmt.Errorf("job.mode: '%s' is unknown; use fixed-rate or saturated", mode)
	}
	if (p.count <= 0 && p.duration <= 0) || (p.fixed && !(p.rate > 0)) {
		return p, fmt.Errorf("bad producer arguments (count/duration or rate)")
	}
	if p.headerEvery < 1 {
		p.headerEvery = 1
	}
	tickS := j.num("tick_s", 0.002)
	if !(tickS >= 0 && tickS <= 1) {
		return p, fmt.Errorf("job.tick_s: must be within 0..1 s, got %g", tickS)
	}
	p.tick = int64(tickS * 1e9)
	switch p.keys {
	case "none", "round-robin", "random":
	default:
		return p, fmt.Errorf("job.keys: '%s' is unknown; use none, round-robin or random", p.keys)
	}
	if p.keys != "none" && p.nkeys < 1 {
		return p, fmt.Errorf("job.nkeys: must be >= 1 with keys = %s", p.keys)
	}
	return p, nil
}

// runProducer is the loop of csrc/core/producer.c: fixed-rate on the tick rule of
// csrc/core/pacing.c (wakes at max(due(next), previous scheduled wake + tick), asleep in
// clock_nanosleep in between, every due message sent at a wake), or saturated.
func runProducer(j job, b backend) (map[string]any, error) {
	pj, err := parseProducerJob(j)
	if err != nil {
		return nil, err
	}
	recs, err := readCorpus(j.str("corpus_file", ""), j.str("corpus_format", "lenprefixed"))
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	if pj.keys != "none" {
		keys = make([][]byte, pj.nkeys)
		for k := range keys {
			keys[k] = []byte(fmt.Sprintf("key-%d", k))
		}
	}
	a := newAcks()
	prod, err := b.newProducer(j, j.props(), a) // connects and reads the topic's metadata
	if err != nil {
		return nil, err
	}
	delay := NewHistogram()
	clientErrors := newErrCounts()
	var sent, wakes, sampled, bytes, failedAtOnce int64
	var tFirst, tLast, tLastDue int64

	w := newCPUWindow(j.num("skip_s", 0))
	say("STARTED")
	tStart := mono()
	startWall := wallNs()
	w.start()
	rnd := uint64(0x9E3779B97F4A7C15) ^ uint64(pj.runID)
	t0 := mono() + 1_000_000         // first message due 1 ms from now
	a.latFrom = int64(math.MinInt64) // no skip: every message (a saturated loop sends before t0)
	if skip := int64(j.num("latency_skip_s", 0) * 1e9); skip > 0 {
		a.latFrom = t0 + skip
	}
	a.series = newIntervals(int64(j.num("interval_s", 0)*1e9), t0-1_000_000)
	end := int64(math.MaxInt64)
	if pj.duration > 0 {
		end = t0 + int64(pj.duration*1e9)
	}
	period := 0.0
	if pj.fixed {
		period = 1e9 / pj.rate
	}
	rec := 0
	wake := t0 - pj.tick           // the first wake is max(due(0), wake + tick) = t0
	wokeAt := int64(math.MinInt64) // the clock at the last wake: everything due by it is sent
	for seq := int64(0); ; seq++ {
		if pj.count > 0 && seq >= pj.count {
			break
		}
		due := int64(-1)
		if pj.fixed {
			due = t0 + int64(float64(seq)*period)
			if due >= end {
				break
			}
			if due > wokeAt {
				// not due at the last wake: sleep to the next one, the later of this due time
				// and the last scheduled wake + tick, then send every message due by then
				if wake+pj.tick > due {
					wake += pj.tick
				} else {
					wake = due
				}
				sleepUntil(wake)
				wokeAt = mono()
				wakes++
			}
		} else if seq&1023 == 0 && mono() >= end {
			break
		}
		var key []byte
		if keys != nil {
			var k uint64
			if pj.keys == "random" {
				rnd ^= rnd << 13
				rnd ^= rnd >> 7
				rnd ^= rnd << 17
				k = rnd % uint64(pj.nkeys)
			} else {
				k = uint64(seq) % uint64(pj.nkeys)
			}
			key = keys[k]
		}
		val := recs[rec]
		if rec++; rec == len(recs) {
			rec = 0
		}
		s := mono()
		var kb []byte
		withHeader := seq%pj.headerEvery == 0
		if withHeader {
			kb = kbHeader(s, seq, pj.runID)
		}
		if err := prod.send(seq, key, val, kb, s, due); err != nil {
			clientErrors.add(errName(err), 1)
			failedAtOnce++
			continue
		}
		if sent == 0 {
			tFirst = s
		}
		tLast = s
		sent++
		if a.series != nil {
			a.series.counted(s, int64(len(val)))
		}
		if withHeader {
			sampled++
		}
		bytes += int64(len(val))
		if pj.fixed {
			if due >= a.latFrom {
				delay.Record(s - due)
			}
			tLastDue = due
		}
	}
	ferr := prod.flush(30 * time.Second)
	tFlushed := mono()
	cpu, cpuWin := w.stop()
	tEnd := mono()                                        // the run window holds the CPU window
	deliveryErrors := mergeErrors(a.errors, clientErrors) // failed reports and failed send calls
	if ferr != nil {
		clientErrors.add(errName(ferr), 1)
	}
	stats := prod.stats()
	endWall := wallNs()

	a.mu.Lock()
	delivered, failedReports := a.delivered, a.failed
	service, corrected := a.service.Summary(), a.corrected.Summary()
	a.mu.Unlock()
	sendStart := tFirst
	if pj.fixed {
		sendStart = t0
	}
	sendSeconds := math.Max(0, float64(tLast-sendStart)/1e9)
	span := float64(tFlushed-tFirst) / 1e9
	achieved, deliveredRate := 0.0, 0.0
	if sent >= 2 && sendSeconds > 0 {
		achieved = float64(sent-1) / sendSeconds
	}
	if sent > 0 && span > 0 {
		deliveredRate = float64(delivered) / span
	}
	out := map[string]any{
		"sent": sent, "delivered": delivered, "failed": failedReports + failedAtOnce,
		"undelivered": max(0, sent-delivered-failedReports), "bytes": bytes, "sampled": sampled,
		"wakes": wakes, "achieved_rate": achieved, "delivered_rate": deliveredRate,
		"send_seconds": sendSeconds, "delivery_errors": deliveryErrors,
		"client_errors": clientErrors.snapshot(), "service": service, "delay": nil, "corrected": nil,
		"cpu": cpu, "client_stats": stats, "client_config": prod.config(),
	}
	if pj.fixed {
		out["delay"], out["corrected"] = delay.Summary(), corrected
	}
	if a.series != nil {
		out["intervals"] = a.series.finish(tFlushed)
		out["intervals_latency"] = "service"
		if pj.fixed {
			out["intervals_latency"] = "corrected"
		}
	}
	var lastDue any
	if pj.fixed {
		lastDue = tLastDue
	}
	out["windows"] = map[string]any{
		"run":              window(tStart, tEnd, startWall, endWall),
		"send":             window(sendStart, tLast, startWall+(sendStart-tStart), startWall+(tLast-tStart)),
		"cpu":              cpuWin,
		"last_due_mono_ns": lastDue,
	}
	return out, nil
}

// mergeErrors is delivery_errors: failed delivery reports and failed send calls, by name.
func mergeErrors(a, b *errCounts) map[string]any {
	out := a.snapshot()
	for k, v := range b.snapshot() {
		if n, ok := out[k].(int64); ok {
			out[k] = n + v.(int64)
		} else {
			out[k] = v
		}
	}
	return out
}
