package io.cudaloom.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The switch {@code cudaloom.driverCalls}: ffm or jcuda, any case; anything else fails in one line naming both. */
class DriverCallsTest {
    @Test
    void unsetOrBlankOrJcudaMeansJcudaAndFfmInAnyCaseMeansFfm() {
        assertFalse(DriverCalls.ffmRequested(null));
        assertFalse(DriverCalls.ffmRequested(""));
        assertFalse(DriverCalls.ffmRequested("  "));
        assertFalse(DriverCalls.ffmRequested("jcuda"));
        assertFalse(DriverCalls.ffmRequested("JCuda"));
        assertTrue(DriverCalls.ffmRequested("ffm"));
        assertTrue(DriverCalls.ffmRequested("FFM"));
        assertTrue(DriverCalls.ffmRequested(" ffm "));
    }

    @Test
    void unsetOrBlankTriesTheDowncallsQuietlyFfmTriesThemAndJcudaDoesNot() {
        assertEquals(DriverCalls.Choice.UNSET, DriverCalls.choice((String) null));
        assertEquals(DriverCalls.Choice.UNSET, DriverCalls.choice(" "));
        assertEquals(DriverCalls.Choice.FFM, DriverCalls.choice("FFM"));
        assertEquals(DriverCalls.Choice.JCUDA, DriverCalls.choice("jcuda"));
        assertTrue(DriverCalls.Choice.UNSET.triesFfm());
        assertTrue(DriverCalls.Choice.FFM.triesFfm());
        assertFalse(DriverCalls.Choice.JCUDA.triesFfm());
        assertThrows(IllegalArgumentException.class, () -> DriverCalls.choice("fmm"));
    }

    @Test
    void aBadValueIsAOneLineExceptionNamingThePropertyAndTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DriverCalls.ffmRequested("fmm"));
        assertEquals("cudaloom.driverCalls must be ffm or jcuda, was 'fmm'", e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
        assertEquals("cudaloom.driverCalls must be ffm or jcuda, was 'jni'",
                assertThrows(IllegalArgumentException.class, () -> DriverCalls.ffmRequested("jni")).getMessage());
    }

    /** A device's open checks the property before anything else (no driver needed to see it). */
    @Test
    void openingADeviceWithABadValueFailsWithThatException() {
        String previous = System.getProperty(DriverCalls.PROPERTY);
        System.setProperty(DriverCalls.PROPERTY, "fmm");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CudaDevice.open(0));
            assertEquals("cudaloom.driverCalls must be ffm or jcuda, was 'fmm'", e.getMessage());
        } finally {
            if (previous == null) {
                System.clearProperty(DriverCalls.PROPERTY);
            } else {
                System.setProperty(DriverCalls.PROPERTY, previous);
            }
        }
    }
}
