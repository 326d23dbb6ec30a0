// Command gen draws Llamatray's icons: the tray state icons (colour and macOS template variants) and the
// 512×512 application icon. Run it from the repository root with `go run ./assets/gen` (or pass the
// output folder as the only argument); the PNGs it writes are embedded by package assets.
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// shape reports whether a point in unit coordinates (0..1, y down) is inside.
type shape func(x, y float64) bool

// layer is one shape painted with a colour; erase cuts the shape out of what is below.
type layer struct {
	s     shape
	c     color.NRGBA
	erase bool
}

const supersample = 5

// render rasterises layers into a size×size image, antialiased by supersampling.
func render(size int, layers []layer) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	n := float64(supersample * supersample)
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, a float64 // premultiplied sums over samples
			for sy := 0; sy < supersample; sy++ {
				for sx := 0; sx < supersample; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/supersample) / float64(size)
					y := (float64(py) + (float64(sy)+0.5)/supersample) / float64(size)
					var cr, cg, cb, ca float64
					for _, l := range layers {
						if !l.s(x, y) {
							continue
						}
						if l.erase {
							cr, cg, cb, ca = 0, 0, 0, 0
							continue
						}
						la := float64(l.c.A) / 255
						cr = float64(l.c.R)/255*la + cr*(1-la)
						cg = float64(l.c.G)/255*la + cg*(1-la)
						cb = float64(l.c.B)/255*la + cb*(1-la)
						ca = la + ca*(1-la)
					}
					r, g, b, a = r+cr, g+cg, b+cb, a+ca
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{
				R: uint8(math.Round(r / a * 255)),
				G: uint8(math.Round(g / a * 255)),
				B: uint8(math.Round(b / a * 255)),
				A: uint8(math.Round(a / n * 255)),
			})
		}
	}
	return img
}

func disk(cx, cy, r float64) shape {
	return func(x, y float64) bool { return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r }
}

func ring(cx, cy, r, w float64) shape {
	return func(x, y float64) bool {
		d := math.Hypot(x-cx, y-cy)
		return d <= r && d >= r-w
	}
}

// arc is a ring segment from angle a0 to a1 (radians, clockwise from 12 o'clock) with round caps.
func arc(cx, cy, r, w, a0, a1 float64) shape {
	mid := r - w/2
	capAt := func(a float64) shape {
		return disk(cx+mid*math.Sin(a), cy-mid*math.Cos(a), w/2)
	}
	c0, c1 := capAt(a0), capAt(a1)
	return func(x, y float64) bool {
		if c0(x, y) || c1(x, y) {
			return true
		}
		d := math.Hypot(x-cx, y-cy)
		if d > r || d < r-w {
			return false
		}
		a := math.Atan2(x-cx, -(y - cy))
		if a < 0 {
			a += 2 * math.Pi
		}
		return a >= a0 && a <= a1
	}
}

// ellipse is an ellipse rotated by rot radians.
func ellipse(cx, cy, rx, ry, rot float64) shape {
	s, c := math.Sin(rot), math.Cos(rot)
	return func(x, y float64) bool {
		dx, dy := x-cx, y-cy
		u := dx*c + dy*s
		v := -dx*s + dy*c
		return (u*u)/(rx*rx)+(v*v)/(ry*ry) <= 1
	}
}

// roundRect is an axis-aligned rectangle with corner radius r.
func roundRect(x0, y0, x1, y1, r float64) shape {
	return func(x, y float64) bool {
		if x < x0 || x > x1 || y < y0 || y > y1 {
			return false
		}
		qx := math.Max(math.Max(x0+r-x, x-(x1-r)), 0)
		qy := math.Max(math.Max(y0+r-y, y-(y1-r)), 0)
		return qx*qx+qy*qy <= r*r
	}
}

// triangle is the filled triangle a, b, c.
func triangle(ax, ay, bx, by, cx, cy float64) shape {
	side := func(px, py, qx, qy, x, y float64) float64 { return (qx-px)*(y-py) - (qy-py)*(x-px) }
	return func(x, y float64) bool {
		d1 := side(ax, ay, bx, by, x, y)
		d2 := side(bx, by, cx, cy, x, y)
		d3 := side(cx, cy, ax, ay, x, y)
		neg := d1 < 0 || d2 < 0 || d3 < 0
		pos := d1 > 0 || d2 > 0 || d3 > 0
		return !(neg && pos)
	}
}

// dilate grows a shape by d in every direction (approximately, by sampling twelve offsets).
func dilate(s shape, d float64) shape {
	return func(x, y float64) bool {
		if s(x, y) {
			return true
		}
		for i := 0; i < 12; i++ {
			a := float64(i) * math.Pi / 6
			if s(x+d*math.Cos(a), y+d*math.Sin(a)) {
				return true
			}
		}
		return false
	}
}

func union(ss ...shape) shape {
	return func(x, y float64) bool {
		for _, s := range ss {
			if s(x, y) {
				return true
			}
		}
		return false
	}
}

func hex(s string) color.NRGBA {
	var r, g, b uint8
	fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b)
	return color.NRGBA{R: r, G: g, B: b, A: 255}
}

var (
	black = color.NRGBA{A: 255}
	white = color.NRGBA{R: 255, G: 255, B: 255, A: 255}
)

// llamaHead is the mark shared by every icon: a llama's head and neck in profile, facing right, inside
// the unit square scaled by s around (cx, cy).
func llamaHead(cx, cy, s float64) shape {
	at := func(x, y float64) (float64, float64) { return cx + (x-0.5)*s, cy + (y-0.5)*s }
	ex := func(x, y, rx, ry, rot float64) shape {
		px, py := at(x, y)
		return ellipse(px, py, rx*s, ry*s, rot)
	}
	rr := func(x0, y0, x1, y1, r float64) shape {
		ax, ay := at(x0, y0)
		bx, by := at(x1, y1)
		return roundRect(ax, ay, bx, by, r*s)
	}
	return union(
		rr(0.30, 0.38, 0.56, 1.05, 0.12),  // neck
		ex(0.52, 0.34, 0.20, 0.15, 0.15),  // head
		ex(0.70, 0.42, 0.14, 0.09, 0.35),  // snout
		ex(0.40, 0.13, 0.05, 0.13, -0.25), // back ear
		ex(0.53, 0.12, 0.05, 0.13, 0.20),  // front ear
	)
}

// eye is the llama's eye, cut out of the head.
func eye(cx, cy, s float64) shape {
	return disk(cx+(0.56-0.5)*s, cy+(0.30-0.5)*s, 0.035*s)
}

// State icons: a badge in the lower right corner over the llama mark tells idle, serving, loading, error.
type state struct {
	name   string
	colour color.NRGBA
	badge  func(fill color.NRGBA) []layer
}

func states() []state {
	const bx, by, br = 0.74, 0.74, 0.25 // badge centre and radius
	cut := disk(bx, by, br+0.06)        // gap between the mark and the badge
	return []state{
		{"idle", hex("#8c959f"), func(c color.NRGBA) []layer {
			return []layer{{s: cut, erase: true}, {s: ring(bx, by, br-0.02, 0.08), c: c}}
		}},
		{"serving", hex("#2da44e"), func(c color.NRGBA) []layer {
			return []layer{{s: cut, erase: true}, {s: disk(bx, by, br), c: c},
				{s: triangle(bx-0.08, by-0.12, bx-0.08, by+0.12, bx+0.13, by), erase: true}}
		}},
		{"loading", hex("#d4a72c"), func(c color.NRGBA) []layer {
			return []layer{{s: cut, erase: true}, {s: arc(bx, by, br, 0.09, 0, 1.5*math.Pi), c: c},
				{s: disk(bx, by, 0.06), c: c}}
		}},
		{"error", hex("#cf222e"), func(c color.NRGBA) []layer {
			return []layer{{s: cut, erase: true}, {s: disk(bx, by, br), c: c},
				{s: roundRect(bx-0.035, by-0.16, bx+0.035, by+0.04, 0.03), erase: true},
				{s: disk(bx, by+0.11, 0.04), erase: true}}
		}},
	}
}

func trayIcon(st state, template bool) *image.NRGBA {
	mark := hex("#3d444d")
	fill := st.colour
	if template {
		mark, fill = black, black
	}
	layers := []layer{
		{s: llamaHead(0.40, 0.44, 0.86), c: mark},
		{s: eye(0.40, 0.44, 0.86), erase: true},
	}
	badge := st.badge(fill)
	if !template {
		// a light outline keeps the dark mark visible on dark panels
		layers = append([]layer{{s: dilate(llamaHead(0.40, 0.44, 0.86), 0.035), c: white}}, layers...)
		badge[0] = layer{s: disk(0.74, 0.74, 0.30), c: white}
	}
	layers = append(layers, badge...)
	return render(64, layers)
}

func appIcon() *image.NRGBA {
	bg := roundRect(0.06, 0.06, 0.94, 0.94, 0.2)
	top, bottom := hex("#4f46e5"), hex("#0ea5e9")
	// vertical gradient, drawn as bands
	var layers []layer
	const bands = 64
	for i := 0; i < bands; i++ {
		t := float64(i) / (bands - 1)
		c := color.NRGBA{
			R: uint8(float64(top.R)*(1-t) + float64(bottom.R)*t),
			G: uint8(float64(top.G)*(1-t) + float64(bottom.G)*t),
			B: uint8(float64(top.B)*(1-t) + float64(bottom.B)*t),
			A: 255,
		}
		y0, y1 := 0.06+0.88*float64(i)/bands, 0.06+0.88*float64(i+1)/bands
		layers = append(layers, layer{s: func(x, y float64) bool { return y >= y0 && y <= y1+0.001 && bg(x, y) }, c: c})
	}
	head := llamaHead(0.47, 0.47, 0.72)
	layers = append(layers,
		layer{s: func(x, y float64) bool { return head(x, y) && bg(x, y) }, c: white},
		layer{s: eye(0.47, 0.47, 0.72), c: top},
		layer{s: roundRect(0.62, 0.70, 0.84, 0.76, 0.03), c: color.NRGBA{R: 255, G: 255, B: 255, A: 200}},
		layer{s: disk(0.80, 0.73, 0.018), c: hex("#2da44e")},
	)
	return render(512, layers)
}

func write(dir, name string, img image.Image) error {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return f.Close()
}

func main() {
	dir := "assets"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	icons := map[string]image.Image{"icon.png": appIcon()}
	for _, st := range states() {
		icons["tray-"+st.name+".png"] = trayIcon(st, false)
		icons["tray-"+st.name+"-template.png"] = trayIcon(st, true)
	}
	for name, img := range icons {
		if err := write(dir, name, img); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
