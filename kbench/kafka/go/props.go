package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// brokers is bootstrap.servers as a list of host:port.
func brokers(props map[string]string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(props["bootstrap.servers"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("props.bootstrap.servers: missing; give host:port[,host:port]")
	}
	return out, nil
}

func propInt(props map[string]string, k string) (int64, bool, error) {
	v, ok := props[k]
	if !ok {
		return 0, false, nil
	}
	i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("property %s: '%s' is not an integer", k, v)
	}
	return i, true, nil
}

// propDuration is a Go duration ("5ms", "1.5s") or a plain number of milliseconds.
func propDuration(props map[string]string, k string) (time.Duration, bool, error) {
	v, ok := props[k]
	if !ok {
		return 0, false, nil
	}
	s := strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Millisecond)), true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, true, fmt.Errorf("property %s: '%s' is not a duration (e.g. 5ms) nor a number of ms", k, v)
	}
	return d, true, nil
}

func propBool(props map[string]string, k string) (bool, bool, error) {
	v, ok := props[k]
	if !ok {
		return false, false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, true, fmt.Errorf("property %s: '%s' is not true or false", k, v)
	}
	return b, true, nil
}

// acksValue is acks / RequiredAcks: all or -1, 1, 0.
func acksValue(k, v string) (int, error) {
	switch strings.TrimSpace(v) {
	case "all", "-1":
		return -1, nil
	case "1":
		return 1, nil
	case "0":
		return 0, nil
	}
	return 0, fmt.Errorf("property %s: '%s' is not valid; use all (-1), 1 or 0", k, v)
}

// codecLevel checks a compression level against what the client's codec takes.
func codecLevel(client, codec string, level int64) error {
	switch codec {
	case "gzip":
		if level < 1 || level > 9 {
			return fmt.Errorf("%s: gzip level %d is out of range; use 1..9", client, level)
		}
	case "zstd":
		if level < 1 || level > 22 {
			return fmt.Errorf("%s: zstd level %d is out of range; use 1..22", client, level)
		}
	default:
		return fmt.Errorf("%s: the %s codec takes no compression level; drop the level", client, codec)
	}
	return nil
}
