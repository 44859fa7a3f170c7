/* speexprep: speexdsp's preprocessor over 16 kHz mono s16le, stdin to
 * stdout, in 10 ms frames (the benchmark's candidate stage, issue 25).
 *
 *   speexprep DENOISE AGC [SUPPRESS_DB [AGC_LEVEL]]
 *
 * DENOISE, AGC: 0 or 1; SUPPRESS_DB: the noise suppression's maximum
 * attenuation (default -15, the library's); AGC_LEVEL: the AGC's target
 * (default 8000 of 32768, the library's). Built by bench/noise/run.sh
 * against Debian's libspeexdsp-dev unpacked into build/ (not installed).
 */
#include <speex/speex_preprocess.h>
#include <stdio.h>
#include <stdlib.h>

#define FRAME 160

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: speexprep DENOISE AGC [SUPPRESS_DB [AGC_LEVEL]]\n");
		return 2;
	}
	int denoise = atoi(argv[1]), agc = atoi(argv[2]);
	int suppress = argc > 3 ? atoi(argv[3]) : -15;
	float level = argc > 4 ? (float)atof(argv[4]) : 8000.0f;
	SpeexPreprocessState *st = speex_preprocess_state_init(FRAME, 16000);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_DENOISE, &denoise);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &suppress);
	speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC, &agc);
	if (agc)
		speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_AGC_LEVEL, &level);
	spx_int16_t buf[FRAME];
	size_t n;
	while ((n = fread(buf, sizeof buf[0], FRAME, stdin)) > 0) {
		for (size_t i = n; i < FRAME; i++)
			buf[i] = 0;
		speex_preprocess_run(st, buf);
		if (fwrite(buf, sizeof buf[0], n, stdout) != n)
			return 1;
	}
	speex_preprocess_state_destroy(st);
	return 0;
}
