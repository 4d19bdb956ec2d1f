package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// logMsg is one distinct server log message with how often it was logged.
type logMsg struct {
	Level   string `json:"level"`
	Msg     string `json:"msg"`
	Count   int    `json:"count"`
	Example string `json:"example"`
	File    string `json:"file"`
}

// logSummary counts what the servers logged (JSON lines, --log-format json)
// and what the Go runtime wrote to stderr (panics, data races).
type logSummary struct {
	Files       int      `json:"files"`
	ErrorLines  int      `json:"errorLines"`
	WarnLines   int      `json:"warnLines"`
	Panics      int      `json:"panics"`
	DataRaces   int      `json:"dataRaces"`
	TopErrors   []logMsg `json:"topErrors"`
	TopWarnings []logMsg `json:"topWarnings"`
	Crashes     []string `json:"crashExcerpts,omitempty"` // first lines of each panic or race report
}

const maxTop = 8

func scanLogs(files []string) logSummary {
	var s logSummary
	errs, warns := map[string]*logMsg{}, map[string]*logMsg{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		s.Files++
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		name := filepath.Base(path)
		excerpt := 0 // lines still to copy into the current crash excerpt
		for sc.Scan() {
			line := sc.Text()
			if excerpt > 0 {
				s.Crashes[len(s.Crashes)-1] += "\n" + truncate(line, 300)
				excerpt--
			}
			if strings.HasPrefix(line, "{") {
				var m struct {
					Level string `json:"level"`
					Msg   string `json:"msg"`
				}
				if json.Unmarshal([]byte(line), &m) != nil {
					continue
				}
				var into map[string]*logMsg
				switch m.Level {
				case "ERROR":
					s.ErrorLines++
					into = errs
				case "WARN":
					s.WarnLines++
					into = warns
				default:
					continue
				}
				if e := into[m.Msg]; e != nil {
					e.Count++
				} else {
					into[m.Msg] = &logMsg{Level: m.Level, Msg: m.Msg, Count: 1, Example: truncate(line, 600), File: name}
				}
				continue
			}
			switch {
			case strings.Contains(line, "WARNING: DATA RACE"):
				s.DataRaces++
				s.Crashes = append(s.Crashes, name+": "+line)
				excerpt = 24
			case strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
				s.Panics++
				s.Crashes = append(s.Crashes, name+": "+truncate(line, 300))
				excerpt = 24
			}
		}
		f.Close()
	}
	s.TopErrors, s.TopWarnings = top(errs), top(warns)
	return s
}

func top(m map[string]*logMsg) []logMsg {
	var out []logMsg
	for _, v := range m {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Msg < out[j].Msg
	})
	if len(out) > maxTop {
		out = out[:maxTop]
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
