package io.cudaloom;

import io.cudaloom.GpuKernel.Param;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads an {@code .entry}'s parameter list from PTX text: {@code .u64}/{@code .s64}/{@code .b64}
 * is {@link Param#POINTER_OR_LONG} (PTX does not say whether a 64-bit word is an address),
 * 8-, 16- and 32-bit integers are {@link Param#INT}, {@code .f32} {@link Param#FLOAT}, {@code .f64}
 * {@link Param#DOUBLE}. Anything else (a {@code .b8 s[16]} struct, {@code .f16}) no launch can pass.
 */
final class PtxEntries {
    private static final Pattern COMMENTS = Pattern.compile("//[^\\n]*|/\\*.*?\\*/", Pattern.DOTALL);
    private static final Pattern TYPE = Pattern.compile("\\.([usbf])(8|16|32|64)");

    private PtxEntries() {}

    /**
     * The parameters of {@code .entry entry} in {@code ptx}.
     *
     * @throws IllegalArgumentException if there is no such entry, or a parameter is of a type no
     *     launch can pass
     */
    static List<Param> params(String ptx, String entry) {
        String text = COMMENTS.matcher(ptx).replaceAll(" ");
        Matcher m = Pattern.compile("\\.entry\\s+" + Pattern.quote(entry) + "(?![\\w$])").matcher(text);
        if (!m.find()) {
            throw new IllegalArgumentException("the PTX has no .entry named '" + entry + "'");
        }
        int at = m.end();
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
        if (at >= text.length() || text.charAt(at) != '(') {
            return List.of(); // ".entry name {": no parameter list
        }
        int close = text.indexOf(')', at);
        if (close < 0) {
            throw new IllegalArgumentException("the parameter list of .entry '" + entry + "' is not closed");
        }
        String list = text.substring(at + 1, close).trim();
        if (list.isEmpty()) {
            return List.of();
        }
        List<Param> params = new ArrayList<>();
        String[] declarations = list.split(",");
        for (int i = 0; i < declarations.length; i++) {
            params.add(param(entry, i, declarations[i].trim()));
        }
        return List.copyOf(params);
    }

    private static Param param(String entry, int index, String declaration) {
        String[] words = declaration.split("\\s+");
        if (words.length < 2 || !words[0].equals(".param")) {
            throw new IllegalArgumentException("parameter " + index + " of .entry '" + entry + "' is not a .param: '"
                    + declaration + "'");
        }
        String type = null;
        for (String w : words) {
            if (TYPE.matcher(w).matches()) {
                type = w;
                break;
            }
        }
        String name = words[words.length - 1];
        if (type == null || name.contains("[") || type.equals(".f8") || type.equals(".f16")) {
            throw new IllegalArgumentException("parameter " + index + " of .entry '" + entry + "' ('" + declaration
                    + "') has a type no launch can pass: use .u64/.s64/.b64 (DeviceMemory or Long), .u32/.s32/.b32"
                    + " (Integer), .f32 (Float) or .f64 (Double)");
        }
        return switch (type.substring(2)) {
            case "64" -> type.charAt(1) == 'f' ? Param.DOUBLE : Param.POINTER_OR_LONG;
            case "32" -> type.charAt(1) == 'f' ? Param.FLOAT : Param.INT;
            default -> Param.INT; // .u8 to .b16: passed as an Integer, the driver takes the low bytes
        };
    }
}
