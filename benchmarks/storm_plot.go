package benchmarks

import (
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotStorm draws the statements the database received per second over
// time, one line per result, with the database's capacity, as a PNG (or
// SVG, by path's extension) at path.
func PlotStorm(s Storm, results []StormResult, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "statements received per second"
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(10)
	var ticks []plot.Tick
	for t := 0.0; t <= s.Horizon.Seconds(); t += 5 {
		ticks = append(ticks, plot.Tick{Value: t, Label: fmt.Sprint(t)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())

	capacity := plotter.XYs{
		{X: 0, Y: s.Capacity}, {X: s.DegradeAt.Seconds(), Y: s.Capacity},
		{X: s.DegradeAt.Seconds(), Y: s.Capacity * s.DegradedShare},
		{X: (s.DegradeAt + s.DegradeFor).Seconds(), Y: s.Capacity * s.DegradedShare},
		{X: (s.DegradeAt + s.DegradeFor).Seconds(), Y: s.Capacity}, {X: s.Horizon.Seconds(), Y: s.Capacity},
	}
	cl, err := plotter.NewLine(capacity)
	if err != nil {
		return err
	}
	cl.Color = color.Gray{Y: 140}
	cl.Width = vg.Points(2.5)
	cl.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(cl)
	p.Legend.Add("database capacity", cl)

	for i, r := range results {
		xy := make(plotter.XYs, len(r.Series))
		for j, v := range r.Series {
			xy[j] = plotter.XY{X: (float64(j) + 0.5) * s.Bucket.Seconds(), Y: v}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if r.Budget {
			l.Width = vg.Points(3)
		}
		p.Add(l)
		name := r.Policy
		if r.Stopped > 0 {
			name += fmt.Sprintf(" (no recovery, stopped at %.0f s)", r.Stopped.Seconds())
		}
		p.Legend.Add(name, l)
	}
	p.Y.Min = 0
	p.X.Min, p.X.Max = 0, s.Horizon.Seconds()
	return p.Save(12*vg.Inch, 6.5*vg.Inch, path)
}

// palette tells the policies apart (colour-blind safe, after Okabe and Ito).
var palette = []color.Color{
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{128, 0, 0, 255},     // dark red
}

// Series is one line of PlotSeries: a value per bucket.
type Series struct {
	Name   string
	Values []float64
	Bold   bool // drawn wider (the policies with crl's budget)
}

// PlotSeries draws lines over time, a value per bucket of width bucket,
// with a dotted vertical line at each of marks (the degradation's start
// and end), as a PNG (or SVG, by path's extension) at path.
func PlotSeries(title, yLabel string, bucket time.Duration, marks []time.Duration, lines []Series, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = yLabel
	// Top left, above the lines: before the degradation they all lie low.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(10)
	p.Add(plotter.NewGrid())
	top, width := 0.0, 0
	for _, s := range lines {
		width = max(width, len(s.Values))
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	for _, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.Seconds(), Y: 0}, {X: m.Seconds(), Y: top * 1.05}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 140}
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
		p.Add(l)
	}
	for i, s := range lines {
		xy := make(plotter.XYs, len(s.Values))
		for j, v := range s.Values {
			xy[j] = plotter.XY{X: (float64(j) + 0.5) * bucket.Seconds(), Y: v}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if s.Bold {
			l.Width = vg.Points(3)
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend
	p.X.Min, p.X.Max = 0, float64(width)*bucket.Seconds()
	return p.Save(12*vg.Inch, 6*vg.Inch, path)
}

// PlotHotRow draws one line per series over the hot row's widths: the
// share of increments committed (a value per width of writers), as a PNG
// (or SVG, by path's extension) at path.
func PlotHotRow(title string, writers []int, lines []Series, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "writers on the hot row"
	p.Y.Label.Text = "increments committed (%)"
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), vg.Points(160) // above the lines that end low
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for _, w := range writers {
		ticks = append(ticks, plot.Tick{Value: float64(w), Label: fmt.Sprint(w)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	for i, s := range lines {
		xy := make(plotter.XYs, len(s.Values))
		for j, v := range s.Values {
			xy[j] = plotter.XY{X: float64(writers[j]), Y: v}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = palette[i%len(palette)], palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if s.Bold {
			l.Width = vg.Points(3)
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)} // it lies on the line without a budget
		}
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	p.Y.Min, p.Y.Max = 0, 105
	p.X.Min, p.X.Max = 0, float64(writers[len(writers)-1])+2
	return p.Save(12*vg.Inch, 6*vg.Inch, path)
}
