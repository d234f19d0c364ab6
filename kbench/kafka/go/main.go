// Command kbench-go-driver is kbench's Go driver: one client role per process, speaking the
// driver protocol of docs/drivers.md over one of two Go Kafka clients, segmentio/kafka-go
// (-client kafka-go) and IBM/sarama (-client sarama).  It reads one JSON job line on stdin,
// prints STARTED (producer) or READY (consumer), then one RESULT line (or one ERROR line) on
// stdout.  Nothing else is written to stdout; logs go to stderr.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

const protocolVersion = 1

var outMu sync.Mutex

// say writes one protocol line on stdout, at once.
func say(line string) {
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.WriteString(line + "\n")
}

// mono is CLOCK_MONOTONIC in ns: the clock of every timestamp in the protocol.
func mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// wallNs is CLOCK_REALTIME in ns since the epoch (windows only; never used for latency).
func wallNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// sleepUntil sleeps until the monotonic time t (clock_nanosleep, TIMER_ABSTIME): never spins.
func sleepUntil(t int64) {
	ts := unix.NsecToTimespec(t)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

func window(startMono, endMono, startWall, endWall int64) map[string]any {
	return map[string]any{"start_mono_ns": startMono, "end_mono_ns": endMono,
		"start_wall_ns": startWall, "end_wall_ns": endWall}
}

// errCounts counts errors by name; past 32 distinct names the rest count as OTHER.
type errCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func newErrCounts() *errCounts { return &errCounts{m: map[string]int64{}} }

func (c *errCounts) add(name string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[name]; !ok && len(c.m) >= 32 {
		name = "OTHER"
	}
	c.m[name] += n
}

func (c *errCounts) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s int64
	for _, v := range c.m {
		s += v
	}
	return s
}

func (c *errCounts) snapshot() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]any{}
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// job is the protocol's job object with typed accessors (numbers kept exact: run_id is 63 bits).
type job map[string]any

func (j job) str(k, def string) string {
	if v, ok := j[k].(string); ok {
		return v
	}
	return def
}

func (j job) num(k string, def float64) float64 {
	if v, ok := j[k].(json.Number); ok {
		if f, err := v.Float64(); err == nil {
			return f
		}
	}
	return def
}

func (j job) int(k string, def int64) int64 {
	if v, ok := j[k].(json.Number); ok {
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			return int64(f)
		}
	}
	return def
}

// props is the job's client properties (all strings), in the client's own names.
func (j job) props() map[string]string {
	out := map[string]string{}
	if m, ok := j["props"].(map[string]any); ok {
		for k, v := range m {
			switch x := v.(type) {
			case string:
				out[k] = x
			default:
				out[k] = fmt.Sprint(x)
			}
		}
	}
	return out
}

// moduleVersion is the version of a Go module linked into this binary, as the build records it.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// runtimeFlags are the Go runtime's settings that change CPU and latency: GOMAXPROCS, GOGC, GOMEMLIMIT.
func runtimeFlags() []string {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return def
	}
	return []string{
		fmt.Sprintf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0)),
		"GOGC=" + env("GOGC", "100"),
		"GOMEMLIMIT=" + env("GOMEMLIMIT", "off"),
	}
}

// backend is one Go Kafka client.
type backend interface {
	// info is the protocol's client object without name/runtime: library, version, defaults.
	info() map[string]any
	newProducer(j job, props map[string]string, a *acks) (producer, error)
	newConsumer(j job, props map[string]string) (consumer, error)
}

func backendFor(name string) (backend, error) {
	switch name {
	case "kafka-go":
		return kafkaGoBackend{}, nil
	case "sarama":
		return saramaBackend{}, nil
	}
	return nil, fmt.Errorf("unknown client '%s'; use kafka-go or sarama", name)
}

// checkProps refuses a property this driver does not map: a property must never be dropped silently.
func checkProps(client string, props map[string]string, known map[string]bool) error {
	var bad []string
	for k := range props {
		if !known[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	var names []string
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Errorf("property %s is not supported by the %s driver (it takes %s; docs/drivers.md section 2.1)",
		strings.Join(quoteAll(bad), ", "), client, strings.Join(names, ", "))
}

// union is a role's known properties: its own and the other role's, which it ignores (the runner
// and kbench produce give both roles the same properties, as the Java client takes them).
func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = "'" + x + "'"
	}
	return out
}

func histogramRole(j job) map[string]any {
	h := NewHistogram()
	if vs, ok := j["values"].([]any); ok {
		for _, v := range vs {
			if n, ok := v.(json.Number); ok {
				if i, err := n.Int64(); err == nil {
					h.Record(i)
				}
			}
		}
	}
	return map[string]any{"histogram": h.Summary()}
}

func run(clientName string, in io.Reader) (map[string]any, error) {
	line, err := bufio.NewReaderSize(in, 1<<20).ReadString('\n')
	if err != nil && (err != io.EOF || strings.TrimSpace(line) == "") {
		return nil, errors.New("no job on stdin; the runner sends one JSON line")
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var j job
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("the job is not a JSON object: %v", err)
	}
	if p := j.int("protocol", protocolVersion); p != protocolVersion {
		return nil, fmt.Errorf("protocol %d is not supported; this driver speaks %d", p, protocolVersion)
	}
	if c := j.str("client", ""); c != "" {
		clientName = c
	}
	role := j.str("role", "")
	if role == "histogram" {
		return histogramRole(j), nil
	}
	b, err := backendFor(clientName)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	switch role {
	case "producer":
		out, err = runProducer(j, b)
	case "consumer":
		out, err = runConsumer(j, b)
	default:
		return nil, fmt.Errorf("unknown role '%s'; use producer or consumer", role)
	}
	if err != nil {
		return nil, err
	}
	info := b.info()
	info["name"] = clientName
	info["runtime"] = runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	info["runtime_flags"] = runtimeFlags()
	if cfg, ok := out["client_config"]; ok {
		info["config"] = cfg // the settings this run used, in the client's names
		delete(out, "client_config")
	}
	out["client"] = info
	return out, nil
}

func main() {
	client := flag.String("client", "kafka-go", "the Go Kafka client: kafka-go or sarama")
	flag.Parse()
	out, err := run(*client, os.Stdin)
	// KBENCH_GO_MEMPROFILE=FILE writes the run's allocation profile (go tool pprof -sample_index=alloc_space)
	if path := os.Getenv("KBENCH_GO_MEMPROFILE"); path != "" {
		if f, ferr := os.Create(path); ferr == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}
	}
	if err != nil {
		msg, _ := json.Marshal(err.Error())
		say("ERROR " + string(msg))
		os.Exit(1)
	}
	out["protocol"] = protocolVersion
	b, err := json.Marshal(out)
	if err != nil {
		msg, _ := json.Marshal("the result could not be written as JSON: " + err.Error())
		say("ERROR " + string(msg))
		os.Exit(1)
	}
	say("RESULT " + string(b))
	os.Exit(0)
}
