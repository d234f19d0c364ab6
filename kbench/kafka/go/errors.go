package main

import (
	"errors"
	"strings"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
)

// errName is the client's own word for an error: kafka-go's protocol error titles ("Not Enough
// Replicas"), Sarama's KError messages, else the error's message (its first line, at most 120
// characters, so a count map stays small).
func errName(err error) string {
	var ke kafka.Error
	if errors.As(err, &ke) {
		return ke.Title()
	}
	var se sarama.KError
	if errors.As(err, &se) {
		return se.Error()
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}
