package httpapi

// ExtractModel is the top-level "model" of a JSON object body (scanBody), for the scanner's tests.
func ExtractModel(body []byte) (string, error) {
	f, err := scanBody(body)
	return f.Model, err
}
