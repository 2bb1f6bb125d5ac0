// pprof_dump parses a pprof profile with the pprof project's own parser
// (github.com/google/pprof/profile) and prints, per source line of the file whose name
// ends with SUFFIX, the four heap values summed over the samples that allocated there:
//
//	pprof_dump PROFILE SUFFIX
//	-> "<file basename>:<line> <alloc_objects> <alloc_space> <inuse_objects> <inuse_space>"
//
// The line of a sample is the innermost one (leaf first, inline frames first) in SUFFIX.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pprof_dump PROFILE SUFFIX")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := profile.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse:", err)
		os.Exit(1)
	}
	if err := p.CheckValid(); err != nil {
		fmt.Fprintln(os.Stderr, "invalid:", err)
		os.Exit(1)
	}
	index := map[string]int{}
	for i, st := range p.SampleType {
		index[st.Type+"/"+st.Unit] = i
	}
	names := []string{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count", "inuse_space/bytes"}
	for _, n := range names {
		if _, ok := index[n]; !ok {
			fmt.Fprintln(os.Stderr, "missing sample type", n)
			os.Exit(1)
		}
	}
	fmt.Printf("period %s/%s %d default %s\n", p.PeriodType.Type, p.PeriodType.Unit, p.Period, p.DefaultSampleType)
	sums := map[string][]int64{}
	for _, s := range p.Sample {
		key := ""
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if key == "" && line.Function != nil && strings.HasSuffix(line.Function.Filename, os.Args[2]) {
					key = fmt.Sprintf("%s:%d", filepath.Base(line.Function.Filename), line.Line)
				}
			}
		}
		if key == "" {
			continue
		}
		if sums[key] == nil {
			sums[key] = make([]int64, 4)
		}
		for i, n := range names {
			sums[key][i] += s.Value[index[n]]
		}
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := sums[k]
		fmt.Printf("%s %d %d %d %d\n", k, v[0], v[1], v[2], v[3])
	}
}
