package metrics

import "testing"

func TestStorage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kinds    []string // Set calls in order
		episodes int
		want     string // the kind at 1 in the scrape ("" none)
	}{
		{"never failed", nil, 0, ""},
		{"read-only", []string{"read_only"}, 1, "read_only"},
		{"full, then recovered", []string{"full", ""}, 1, ""},
		{"kind changed within an episode", []string{"gone", "replaced"}, 1, "replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New("test")
			s := m.NewStorage()
			for i := 0; i < tc.episodes; i++ {
				s.Episode()
			}
			for _, k := range tc.kinds {
				s.Set(k)
			}
			fams := scrape(t, start(t, m, nil))
			if got := fams["agorad_storage_failures_total"].GetMetric()[0].GetCounter().GetValue(); got != float64(tc.episodes) {
				t.Errorf("episodes %v, want %d", got, tc.episodes)
			}
			failed := fams["agorad_storage_failed"].GetMetric()
			if len(failed) != len(StorageKinds) {
				t.Fatalf("%d kinds in the scrape, want %d", len(failed), len(StorageKinds))
			}
			for _, mt := range failed {
				k, v := mt.GetLabel()[0].GetValue(), mt.GetGauge().GetValue()
				if (k == tc.want) != (v == 1) {
					t.Errorf("agorad_storage_failed{kind=%q} = %v, want failed kind %q", k, v, tc.want)
				}
			}
		})
	}
}
