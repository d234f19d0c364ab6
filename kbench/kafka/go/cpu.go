package main

import (
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// goMetrics are the Go runtime's own counters read at both ends of the CPU window
// (runtime/metrics): the GC's CPU, the runtime's estimate of goroutine CPU, GC cycles and allocation.
var goMetrics = []struct{ name, key string }{
	{"/cpu/classes/gc/total:cpu-seconds", "gc_s"},
	{"/cpu/classes/gc/mark/assist:cpu-seconds", "gc_assist_s"},
	{"/cpu/classes/gc/pause:cpu-seconds", "gc_pause_s"},
	{"/cpu/classes/scavenge/total:cpu-seconds", "scavenge_s"},
	{"/cpu/classes/user:cpu-seconds", "user_s"},
	{"/cpu/classes/total:cpu-seconds", "total_s"},
	{"/gc/cycles/total:gc-cycles", "gc_cycles"},
	{"/gc/heap/allocs:bytes", "alloc_bytes"},
	{"/gc/heap/allocs:objects", "alloc_objects"},
}

type cpuSnap struct {
	usr, sys float64 // getrusage(RUSAGE_SELF): every thread of the process, live and exited
	ok       bool
	gom      []metrics.Sample
	mono     int64
	wall     int64
}

func snapshot() cpuSnap {
	s := cpuSnap{gom: make([]metrics.Sample, len(goMetrics))}
	for i, m := range goMetrics {
		s.gom[i].Name = m.name
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.usr = float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6
		s.sys = float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
		s.ok = true
	}
	metrics.Read(s.gom)
	s.mono = mono()
	s.wall = wallNs()
	return s
}

func gomValue(s metrics.Sample) (float64, bool) {
	switch s.Value.Kind() {
	case metrics.KindFloat64:
		return s.Value.Float64(), true
	case metrics.KindUint64:
		return float64(s.Value.Uint64()), true
	}
	return 0, false
}

// cpuWindow is the CPU window of docs/drivers.md section 3: it opens skip_s after start()
// (a timer) and closes at stop().
type cpuWindow struct {
	skip  time.Duration
	mu    sync.Mutex
	a     *cpuSnap
	timer *time.Timer
}

func newCPUWindow(skipS float64) *cpuWindow {
	return &cpuWindow{skip: time.Duration(skipS * 1e9)}
}

func (w *cpuWindow) mark() {
	s := snapshot()
	w.mu.Lock()
	if w.a == nil {
		w.a = &s
	}
	w.mu.Unlock()
}

func (w *cpuWindow) start() {
	if w.skip <= 0 {
		w.mark()
		return
	}
	w.timer = time.AfterFunc(w.skip, w.mark)
}

// stop closes the window: the protocol's cpu object and the window (nil when it never opened).
func (w *cpuWindow) stop() (map[string]any, any) {
	if w.timer != nil {
		w.timer.Stop()
	}
	b := snapshot()
	w.mu.Lock()
	a := w.a
	w.a = &b // a timer firing from now on opens no window
	w.mu.Unlock()
	if a == nil {
		return map[string]any{"usr_s": nil, "sys_s": nil, "wall_s": 0.0,
			"note": "run shorter than the steady-window skip"}, nil
	}
	cpu := map[string]any{"wall_s": float64(b.mono-a.mono) / 1e9, "note": ""}
	if a.ok && b.ok {
		cpu["usr_s"], cpu["sys_s"] = b.usr-a.usr, b.sys-a.sys
	} else {
		cpu["usr_s"], cpu["sys_s"], cpu["note"] = nil, nil, "getrusage failed"
	}
	// The Go runtime's view of the same window: the GC's CPU (an estimate by the runtime, not
	// the kernel's accounting) and the allocation that drives it.
	g := map[string]any{}
	for i, m := range goMetrics {
		va, oka := gomValue(a.gom[i])
		vb, okb := gomValue(b.gom[i])
		if oka && okb {
			g[m.key] = vb - va
		} else {
			g[m.key] = nil
		}
	}
	cpu["go"] = g
	return cpu, window(a.mono, b.mono, a.wall, b.wall)
}
