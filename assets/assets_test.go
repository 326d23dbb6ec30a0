package assets

import (
	"bytes"
	"image"
	_ "image/png"
	"testing"
)

func TestIconsDecode(t *testing.T) {
	tray := map[string][]byte{
		"idle": TrayIdle, "serving": TrayServing, "loading": TrayLoading, "error": TrayError,
		"idle-template": TrayIdleTemplate, "serving-template": TrayServingTemplate,
		"loading-template": TrayLoadingTemplate, "error-template": TrayErrorTemplate,
	}
	seen := map[string]string{}
	for name, b := range tray {
		img, format, err := image.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if format != "png" || img.Bounds().Dx() != 64 || img.Bounds().Dy() != 64 {
			t.Errorf("%s: %s %v, want 64×64 png", name, format, img.Bounds())
		}
		if other, dup := seen[string(b)]; dup {
			t.Errorf("%s and %s are the same image", name, other)
		}
		seen[string(b)] = name
	}
	for _, name := range []string{"idle-template", "serving-template", "loading-template", "error-template"} {
		img, _, _ := image.Decode(bytes.NewReader(tray[name]))
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl, a := img.At(x, y).RGBA()
				if a != 0 && (r != 0 || g != 0 || bl != 0) {
					t.Fatalf("%s: pixel (%d,%d) is not black: template icons must be monochrome", name, x, y)
				}
			}
		}
	}
	img, _, err := image.Decode(bytes.NewReader(AppIcon))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 512 || img.Bounds().Dy() != 512 {
		t.Errorf("app icon is %v, want 512×512", img.Bounds())
	}
}
