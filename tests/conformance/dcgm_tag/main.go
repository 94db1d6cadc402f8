// Command dcgm_tag renders samples with dcgm-exporter 4.5.3-4.8.2's own code, for the conformance test
// (tests/conformance/test_dcgm_tag.py). It is the project's program; the tag's packages are imported
// from the unmodified vendor archive (go.mod replace). Its module path starts with the exporter's, which
// is what Go's internal-package rule asks of an importer of internal/pkg/....
//
//	dcgm_tag render [-hpc DIR] < samples.json   exposition bytes on stdout; exit 2 where the tag's
//	                                            server answers HTTP 500 (an HPC mapper error)
//	dcgm_tag format < values.json               one collector value string per line (the tag's toString)
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	_ "unsafe" // go:linkname

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/NVIDIA/dcgm-exporter/internal/pkg/appconfig"
	"github.com/NVIDIA/dcgm-exporter/internal/pkg/collector"
	"github.com/NVIDIA/dcgm-exporter/internal/pkg/counters"
	"github.com/NVIDIA/dcgm-exporter/internal/pkg/rendermetrics"
	"github.com/NVIDIA/dcgm-exporter/internal/pkg/transformation"
)

// The collector's own value formatting (gpu_collector.go toString), unexported at the tag.
//
//go:linkname tagToString github.com/NVIDIA/dcgm-exporter/internal/pkg/collector.toString
func tagToString(value dcgm.FieldValue_v1) string

type sample struct {
	FieldName     string            `json:"field_name"`
	PromType      string            `json:"prom_type"`
	Help          string            `json:"help"`
	Value         string            `json:"value"`
	GPU           string            `json:"gpu"`
	UUID          string            `json:"uuid"`
	PCIBusID      string            `json:"pci_bus_id"`
	Device        string            `json:"device"`
	ModelName     string            `json:"model_name"`
	Hostname      string            `json:"hostname"`
	MigProfile    string            `json:"mig_profile"`
	GPUInstanceID string            `json:"gpu_instance_id"`
	Labels        map[string]string `json:"labels"`
	Attributes    map[string]string `json:"attributes"`
}

type value struct {
	Type   string  `json:"type"` // "i" (int64) or "d" (double), DCGM's field types
	Int    int64   `json:"int"`
	Double float64 `json:"double"`
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

func render(args []string) {
	flags := flag.NewFlagSet("render", flag.ExitOnError)
	hpcDir := flags.String("hpc", "", "run the tag's HPC mapper over this job-mapping directory")
	_ = flags.Parse(args)
	var in []sample
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail(1, "samples: %v", err)
	}
	metrics := collector.MetricsByCounter{}
	for _, s := range in { // input order is the collector's order within a family
		fieldID, ok := dcgm.GetFieldID(s.FieldName) // as counters.ReadCSVFile looks it up
		if !ok {
			fail(1, "no DCGM field id for %s", s.FieldName)
		}
		counter := counters.Counter{FieldID: fieldID, FieldName: s.FieldName, PromType: s.PromType, Help: s.Help}
		if s.Attributes == nil {
			s.Attributes = map[string]string{} // toMetric always makes one
		}
		metrics[counter] = append(metrics[counter], collector.Metric{
			Counter: counter, Value: s.Value, UUID: "UUID", GPU: s.GPU, GPUUUID: s.UUID,
			GPUDevice: s.Device, GPUModelName: s.ModelName, GPUPCIBusID: s.PCIBusID,
			Hostname: s.Hostname, MigProfile: s.MigProfile, GPUInstanceID: s.GPUInstanceID,
			Labels: s.Labels, Attributes: s.Attributes,
		})
	}
	if *hpcDir != "" {
		config := &appconfig.Config{HPCJobMappingDir: *hpcDir}
		for _, transform := range transformation.GetTransformations(config) {
			if err := transform.Process(metrics, nil); err != nil { // the HPC mapper reads no device info
				fail(2, "%s: %v", transform.Name(), err)
			}
		}
	}
	var out bytes.Buffer
	if err := rendermetrics.RenderGroup(&out, dcgm.FE_GPU, metrics); err != nil {
		fail(2, "render: %v", err)
	}
	_, _ = os.Stdout.Write(out.Bytes())
}

func format() {
	var in []value
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fail(1, "values: %v", err)
	}
	for _, v := range in {
		field := dcgm.FieldValue_v1{}
		switch v.Type {
		case "i":
			field.FieldType = dcgm.DCGM_FT_INT64
			binary.NativeEndian.PutUint64(field.Value[:8], uint64(v.Int))
		case "d":
			field.FieldType = dcgm.DCGM_FT_DOUBLE
			binary.NativeEndian.PutUint64(field.Value[:8], math.Float64bits(v.Double))
		default:
			fail(1, "value type %q: want i or d", v.Type)
		}
		fmt.Println(tagToString(field))
	}
}

func main() {
	if len(os.Args) < 2 {
		fail(1, "usage: dcgm_tag render [-hpc DIR] | format")
	}
	switch os.Args[1] {
	case "render":
		render(os.Args[2:])
	case "format":
		format()
	default:
		fail(1, "unknown command %q", os.Args[1])
	}
}
